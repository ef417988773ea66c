"""`keras.datasets.cifar10.load_data` from local files (binary or python version, or the tarball).

The python version is pickled; it is read with an unpickler that only accepts plain containers
and NumPy arrays, so loading a file can never run code.
"""

from __future__ import annotations

import io
import os
import pickle
import tarfile
from collections.abc import Callable

import numpy as np

_TRAIN = [f"data_batch_{i}" for i in range(1, 6)]
_TEST = "test_batch"
_RECORD = 1 + 32 * 32 * 3


def default_path() -> str:
    return os.path.join(os.path.expanduser("~"), ".keras", "datasets", "cifar-10-batches-py")


class _SafeUnpickler(pickle.Unpickler):
    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray",
                                                              "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module: str, name: str):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"CIFAR-10 file refers to {module}.{name}; refusing to load")


def _python_batch(data: bytes) -> tuple:
    batch = _SafeUnpickler(io.BytesIO(data), encoding="bytes").load()
    x = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return x, np.asarray(batch[b"labels"], dtype=np.uint8)


def _binary_batch(data: bytes) -> tuple:
    records = np.frombuffer(data, dtype=np.uint8).reshape(-1, _RECORD)
    x = records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(x), records[:, 0].copy()


def _load(read: Callable[[str], bytes | None]) -> tuple | None:
    """Try the python then the binary layout, with `read(name)` giving file bytes or None."""
    for suffix, parse in (("", _python_batch), (".bin", _binary_batch)):
        parts = [read(n + suffix) for n in _TRAIN + [_TEST]]
        if all(p is not None for p in parts):
            train = [parse(p) for p in parts[:5]]
            x_test, y_test = parse(parts[5])
            x_train = np.concatenate([t[0] for t in train])
            y_train = np.concatenate([t[1] for t in train])
            return (x_train, y_train.reshape(-1, 1)), (x_test, y_test.reshape(-1, 1))
    return None


def _from_dir(path: str) -> tuple | None:
    def read(name: str) -> bytes | None:
        for d in (path, os.path.join(path, "cifar-10-batches-py"),
                  os.path.join(path, "cifar-10-batches-bin")):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    return f.read()
        return None
    return _load(read)


def _from_tar(path: str) -> tuple | None:
    with tarfile.open(path, "r:*") as tar:
        members = {os.path.basename(m.name): m for m in tar.getmembers() if m.isfile()}

        def read(name: str) -> bytes | None:
            m = members.get(name)
            return None if m is None else tar.extractfile(m).read()
        return _load(read)


def load_data(path: str | None = None) -> tuple:
    """((x_train, y_train), (x_test, y_test)): uint8 [N, 32, 32, 3] images, [N, 1] labels.

    `path`: a directory with the python or binary batches, or the downloaded .tar.gz;
    default ~/.keras/datasets/cifar-10-batches-py (where Keras keeps it).
    """
    path = path or default_path()
    result = None
    if os.path.isdir(path):
        result = _from_dir(path)
    elif os.path.isfile(path):
        result = _from_tar(path)
    if result is None:
        raise FileNotFoundError(
            f"CIFAR-10 not found at {path!r}. This machine has no network, so nothing is "
            f"downloaded: get cifar-10-python.tar.gz or cifar-10-binary.tar.gz from "
            f"https://www.cs.toronto.edu/~kriz/cifar.html and put the archive, or the extracted "
            f"folder (data_batch_1..5 and test_batch), at {default_path()} or pass its path.")
    return result
