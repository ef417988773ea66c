"""Finding a dataset in the Keras cache (``~/.keras/datasets``, or ``$KERAS_HOME/datasets``),
under the file names Keras's loaders use, and reading its ``.npz`` files without running code.

Nothing is downloaded: a missing file raises ``FileNotFoundError`` naming the URL to fetch and
the path to put it at (``tf.keras.utils.get_file`` with that URL puts it there).
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from typing import Any

import numpy as np

KERAS_DATA_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def cache_dir(root: str | None = None) -> str:
    """Where Keras keeps downloaded datasets: ``<root>/datasets``, the root being the
    loader's `cache_dir` argument, else ``$KERAS_HOME``, else ``~/.keras``."""
    root = root or os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".keras")
    return os.path.join(os.path.expanduser(root), "datasets")


def locate(path: str, dataset: str, origin: str, subdir: str = "",
           root: str | None = None) -> str:
    """`path` itself if it exists (an absolute or working-directory path), else the cached
    file Keras's loader would have downloaded; a clear error if neither exists."""
    if os.path.isabs(path) and os.path.exists(path):
        return path
    cached = os.path.join(cache_dir(root), subdir, path)
    if os.path.exists(cached):
        return cached
    if os.path.exists(path):
        return path
    raise FileNotFoundError(
        f"{dataset}: {path!r} is not in the Keras cache ({cached}). tapeflow does not download "
        f"datasets: fetch {origin} and save it as {cached} (for example with "
        f"tf.keras.utils.get_file({os.path.basename(path)!r}, {origin!r}"
        f"{', cache_subdir=' + repr(os.path.join('datasets', subdir)) if subdir else ''})), "
        f"or pass its path.")


class ArrayUnpickler(pickle.Unpickler):
    """Containers and NumPy arrays only (object arrays of word-index lists, CIFAR's batches):
    any other class in the pickle is refused, so a file cannot run code."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"), ("numpy", "ndarray"),
                ("numpy", "dtype"), ("_codecs", "encode")}  # bytes in protocol-2 pickles

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dataset file")
        return super().find_class(module, name)


def load_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz``; object arrays (IMDB's and Reuters' sequences) are unpickled
    with an unpickler that only rebuilds NumPy arrays, so a file cannot run code."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            key = member[:-4] if member.endswith(".npy") else member
            with z.open(member) as raw:
                f = io.BytesIO(raw.read())
            version = np.lib.format.read_magic(f)
            header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            _, _, dtype = header(f)
            if dtype.hasobject:
                out[key] = np.asarray(ArrayUnpickler(f, encoding="latin1").load())
            else:
                f.seek(0)
                out[key] = np.lib.format.read_array(f, allow_pickle=False)
    return out


def sequences(values: Any, start_char: int | None, index_from: int) -> list[list[int]]:
    """Keras's word-index shifting: optional start marker, indices moved up by `index_from`."""
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in values]
    if index_from:
        return [[w + index_from for w in x] for x in values]
    return [list(x) for x in values]


def remove_long(maxlen: int, seqs: list, labels: Any) -> tuple[list, list]:
    """Keep the sequences shorter than `maxlen` (Keras's ``_remove_long_seq``)."""
    kept = [(x, y) for x, y in zip(seqs, labels) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]


def cut_vocabulary(xs: list, num_words: int | None, skip_top: int,
                   oov_char: int | None) -> list[list[int]]:
    """Words outside [skip_top, num_words) become `oov_char` (or are dropped if None)."""
    if not num_words:
        num_words = max(max(x) for x in xs)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    return [[w for w in x if skip_top <= w < num_words] for x in xs]
