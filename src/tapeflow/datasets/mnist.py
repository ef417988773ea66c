"""`keras.datasets.mnist.load_data` from local files (no network): a Keras .npz or idx files."""

from __future__ import annotations

import gzip
import os
import struct

import numpy as np

_IDX = {"x_train": "train-images-idx3-ubyte", "y_train": "train-labels-idx1-ubyte",
        "x_test": "t10k-images-idx3-ubyte", "y_test": "t10k-labels-idx1-ubyte"}


def default_dir() -> str:
    return os.path.join(os.path.expanduser("~"), ".keras", "datasets")


def read_idx(path: str) -> np.ndarray:
    """An array from an idx file (the MNIST format), gzipped or not."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte idx file")
    shape = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _find(directory: str, stem: str) -> str | None:
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"),
                 stem.replace("-idx", ".idx") + ".gz"):
        p = os.path.join(directory, name)
        if os.path.exists(p):
            return p
    return None


def load_data(path: str = "mnist.npz") -> tuple:
    """((x_train, y_train), (x_test, y_test)) as uint8 arrays, from local files.

    `path` may be a Keras `mnist.npz` (relative names are looked up in ~/.keras/datasets, as
    Keras does) or a directory holding the four idx files (optionally .gz). Without network
    access nothing is downloaded: put the files there, or use the built-in
    `tapeflow.datasets.load_mnist_5k()`.
    """
    candidates = [path] if os.path.isabs(path) else [path, os.path.join(default_dir(), path)]
    for p in candidates:
        if os.path.isfile(p):
            with np.load(p, allow_pickle=False) as f:
                return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
        if os.path.isdir(p):
            found = {k: _find(p, stem) for k, stem in _IDX.items()}
            if all(found.values()):
                a = {k: read_idx(v) for k, v in found.items()}
                return (a["x_train"], a["y_train"]), (a["x_test"], a["y_test"])
    where = os.path.join(default_dir(), "mnist.npz")
    raise FileNotFoundError(
        f"MNIST not found at {path!r}. This machine has no network, so nothing is downloaded: "
        f"copy Keras' mnist.npz to {where} (or pass its path), or pass a directory holding "
        f"{', '.join(_IDX.values())} (optionally .gz) from http://yann.lecun.com/exdb/mnist/. "
        f"For a built-in subset use tapeflow.datasets.load_mnist_5k().")
