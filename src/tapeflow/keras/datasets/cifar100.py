"""``tf.keras.datasets.cifar100``: 60,000 32x32 colour images in 100 fine / 20 coarse classes,
from the python version Keras keeps in ``~/.keras/datasets/cifar-100-python`` (read with an
unpickler that only accepts containers and NumPy arrays)."""

from __future__ import annotations

import os

import numpy as np

from tapeflow.keras.datasets import _cache

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"


def _batch(path: str, label_key: str) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as f:
        d = _cache.ArrayUnpickler(f, encoding="bytes").load()
    d = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in d.items()}
    x = np.asarray(d["data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return x, np.reshape(np.asarray(d[label_key]), (-1, 1))


def load_data(label_mode: str = "fine", cache_dir: str | None = None) -> tuple:
    """((x_train, y_train), (x_test, y_test)): uint8 [N, 32, 32, 3], int [N, 1] labels."""
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: '
                         f"label_mode={label_mode}.")
    root = _cache.locate("cifar-100-python", "cifar100", ORIGIN, root=cache_dir)
    key = label_mode + "_labels"
    train = _batch(os.path.join(root, "train"), key)
    test = _batch(os.path.join(root, "test"), key)
    return train, test
