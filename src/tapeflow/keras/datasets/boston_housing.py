"""``tf.keras.datasets.boston_housing``: 506 houses, 13 features, median value; from Keras's
``boston_housing.npz`` in the Keras cache, shuffled and split as Keras does."""

from __future__ import annotations

import numpy as np

from tapeflow.keras.datasets import _cache

ORIGIN = _cache.KERAS_DATA_URL + "boston_housing.npz"


def load_data(path: str = "boston_housing.npz", test_split: float = 0.2,
              seed: int = 113, cache_dir: str | None = None) -> tuple:
    """((x_train, y_train), (x_test, y_test)) as float arrays."""
    if not 0 <= test_split < 1:
        raise ValueError(f"`test_split` must be between 0 and 1. Received: "
                         f"test_split={test_split}")
    data = _cache.load_npz(_cache.locate(path, "boston_housing", ORIGIN, root=cache_dir))
    x, y = data["x"], data["y"]
    order = np.arange(len(x))
    np.random.RandomState(seed).shuffle(order)
    x, y = x[order], y[order]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))
