"""Small real data sets shipped inside the package (see _data/README.md for sources, licences)."""

from __future__ import annotations

import gzip
import os

import numpy as np

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_data")


def _read_csv_gz(name: str) -> np.ndarray:
    with gzip.open(os.path.join(_DATA, name), "rt") as f:
        return np.loadtxt(f, delimiter=",", dtype=np.int64)


def _stratified_split(labels: np.ndarray, test_per_class: int, seed: int = 0):
    """Train/test indices: the last `test_per_class` of each class to test, both shuffled."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        train.append(idx[:-test_per_class])
        test.append(idx[-test_per_class:])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def load_mnist_5k() -> tuple:
    """5,000 MNIST digits as ((x_train, y_train), (x_test, y_test)), 4,000/1,000.

    Images are uint8 [N, 28, 28] (0-255), labels uint8, like `keras.datasets.mnist`; the split
    is stratified (400/100 per digit) and the order fixed, so results are reproducible.
    """
    table = _read_csv_gz("mnist_5k.csv.gz")
    x = table[:, :784].astype(np.uint8).reshape(-1, 28, 28)
    y = table[:, 784].astype(np.uint8)
    train, test = _stratified_split(y, 100)
    return (x[train], y[train]), (x[test], y[test])


def load_digits() -> tuple:
    """The 1,797 UCI/scikit-learn 8x8 digits as (images uint8 [N, 8, 8] in 0-16, labels uint8)."""
    table = _read_csv_gz("digits.csv.gz")
    return table[:, :64].astype(np.uint8).reshape(-1, 8, 8), table[:, 64].astype(np.uint8)
