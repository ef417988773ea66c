"""``tf.keras.datasets.imdb``: 50,000 movie reviews as word-index sequences, from Keras's
``imdb.npz`` in the Keras cache (same shuffling, index shifting and vocabulary cut as Keras)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tapeflow.keras.datasets import _cache

ORIGIN = _cache.KERAS_DATA_URL + "imdb.npz"


def load_data(path: str = "imdb.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, seed: int = 113, start_char: int | None = 1,
              oov_char: int | None = 2, index_from: int = 3, cache_dir: str | None = None,
              **kwargs: Any) -> tuple:
    """((x_train, y_train), (x_test, y_test)); x are object arrays of int lists."""
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}.")
    data = _cache.load_npz(_cache.locate(path, "imdb", ORIGIN, root=cache_dir))
    rng = np.random.RandomState(seed)
    parts = []
    for x_key, y_key in (("x_train", "y_train"), ("x_test", "y_test")):
        x, y = data[x_key], data[y_key]
        order = np.arange(len(x))
        rng.shuffle(order)
        parts.append([_cache.sequences(x[order], start_char, index_from), y[order]])
    if maxlen:
        for part in parts:
            part[0], part[1] = _cache.remove_long(maxlen, part[0], part[1])
        if not parts[0][0] or not parts[1][0]:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no "
                             f"sequence was kept. Increase maxlen.")
    xs = _cache.cut_vocabulary(parts[0][0] + parts[1][0], num_words, skip_top, oov_char)
    labels = np.concatenate([np.asarray(parts[0][1]), np.asarray(parts[1][1])])
    idx = len(parts[0][0])
    return ((_object_array(xs[:idx]), labels[:idx]), (_object_array(xs[idx:]), labels[idx:]))


def _object_array(seqs: list) -> np.ndarray:
    out = np.empty(len(seqs), dtype=object)
    out[:] = seqs
    return out


def get_word_index(path: str = "imdb_word_index.json") -> dict[str, int]:
    """Word -> index (before the ``index_from`` shift), from Keras's JSON file."""
    origin = _cache.KERAS_DATA_URL + "imdb_word_index.json"
    with open(_cache.locate(path, "imdb word index", origin), encoding="utf-8") as f:
        return json.load(f)
