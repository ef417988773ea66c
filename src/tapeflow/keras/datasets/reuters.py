"""``tf.keras.datasets.reuters``: 11,228 newswires in 46 topics as word-index sequences, from
Keras's ``reuters.npz`` in the Keras cache (Keras's shuffling, shifting and split)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tapeflow.keras.datasets import _cache
from tapeflow.keras.datasets.imdb import _object_array

ORIGIN = _cache.KERAS_DATA_URL + "reuters.npz"

_LABELS = ("cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing",
           "money-supply", "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass",
           "crude", "nat-gas", "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum",
           "oilseed", "gold", "tin", "strategic-metal", "livestock", "retail", "ipi",
           "iron-steel", "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem",
           "dlr", "gas", "silver", "wpi", "hog", "lead")


def load_data(path: str = "reuters.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, test_split: float = 0.2, seed: int = 113,
              start_char: int | None = 1, oov_char: int | None = 2, index_from: int = 3,
              cache_dir: str | None = None, **kwargs: Any) -> tuple:
    """((x_train, y_train), (x_test, y_test)); x are object arrays of int lists."""
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}.")
    data = _cache.load_npz(_cache.locate(path, "reuters", ORIGIN, root=cache_dir))
    xs, labels = data["x"], data["y"]
    order = np.arange(len(xs))
    np.random.RandomState(seed).shuffle(order)
    seqs = _cache.sequences(xs[order], start_char, index_from)
    labels = labels[order]
    if maxlen:
        seqs, labels = _cache.remove_long(maxlen, seqs, labels)
    seqs = _cache.cut_vocabulary(seqs, num_words, skip_top, oov_char)
    idx = int(len(seqs) * (1 - test_split))
    return ((_object_array(seqs[:idx]), np.array(labels[:idx])),
            (_object_array(seqs[idx:]), np.array(labels[idx:])))


def get_word_index(path: str = "reuters_word_index.json") -> dict[str, int]:
    origin = _cache.KERAS_DATA_URL + "reuters_word_index.json"
    with open(_cache.locate(path, "reuters word index", origin), encoding="utf-8") as f:
        return json.load(f)


def get_label_names() -> tuple[str, ...]:
    """The 46 topic names, in label order."""
    return _LABELS
