"""``tf.keras.datasets.fashion_mnist``: 70,000 28x28 clothing images in 10 classes, from the
four idx files Keras keeps in ``~/.keras/datasets/fashion-mnist``."""

from __future__ import annotations

from tapeflow.datasets.mnist import read_idx
from tapeflow.keras.datasets import _cache

BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def load_data(cache_dir: str | None = None) -> tuple:
    """((x_train, y_train), (x_test, y_test)): uint8 [N, 28, 28] images, uint8 [N] labels."""
    paths = [_cache.locate(name, "fashion_mnist", BASE + name, subdir="fashion-mnist",
                           root=cache_dir)
             for name in FILES]
    y_train, x_train, y_test, x_test = (read_idx(p) for p in paths)
    return (x_train, y_train), (x_test, y_test)
