"""``tf.keras.preprocessing.sequence``: ``pad_sequences`` (also ``tf.keras.utils``: lists of
varying length to one array, padded and truncated at the start 'pre' or the end 'post'),
``TimeseriesGenerator`` (windows of a series as a ``Sequence`` of batches), and word2vec's
``make_sampling_table`` and ``skipgrams``.

``skipgrams`` draws from Python's global ``random`` exactly as tf-keras does (one shuffle of
the context words, one ``randint`` per negative couple, then couples and labels shuffled with
``random.seed(seed)``), so after the same ``random.seed`` both give the same couples.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np

from tapeflow.keras.engine.sequence import Sequence


def pad_sequences(sequences: Any, maxlen: int | None = None, dtype: Any = "int32",
                  padding: str = "pre", truncating: str = "pre", value: Any = 0.0) -> np.ndarray:
    """[num_samples, maxlen] (plus each step's own shape) with `value` where a sequence is short."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("pad_sequences: `sequences` must be iterable.")
    if padding not in ("pre", "post"):
        raise ValueError(f'pad_sequences: padding type "{padding}" not understood')
    if truncating not in ("pre", "post"):
        raise ValueError(f'pad_sequences: truncating type "{truncating}" not understood')
    lengths, sample_shape = [], ()
    for i, seq in enumerate(sequences):
        try:
            lengths.append(len(seq))
        except TypeError as e:
            raise ValueError(f"pad_sequences: `sequences` must be a list of iterables. Found "
                             f"non-iterable at index {i}: {seq!r}") from e
        if len(seq) and not sample_shape:
            sample_shape = np.asarray(seq).shape[1:]
    maxlen = max(lengths, default=0) if maxlen is None else int(maxlen)
    is_text = np.issubdtype(np.dtype(dtype), np.str_) or np.dtype(dtype) == object
    if isinstance(value, str) and not is_text:
        raise ValueError(f'pad_sequences: `dtype` {dtype} is not compatible with `value`\'s type '
                         f'{type(value)}; use dtype=object for text.')
    out = np.full((len(lengths), maxlen) + tuple(sample_shape), value, dtype=dtype)
    for i, seq in enumerate(sequences):
        if not len(seq) or maxlen == 0:
            continue
        kept = np.asarray(seq[-maxlen:] if truncating == "pre" else seq[:maxlen], dtype=dtype)
        if kept.shape[1:] != tuple(sample_shape):
            raise ValueError(f"pad_sequences: shape of sample {kept.shape[1:]} of sequence at "
                             f"position {i} is different from expected shape "
                             f"{tuple(sample_shape)}")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, -len(kept):] = kept
    return out


class TimeseriesGenerator(Sequence):
    """Batches of windows over a series: sample ``i`` of a batch is
    ``data[row - length:row:sampling_rate]`` with target ``targets[row]``, rows running from
    ``start_index + length`` to ``end_index`` (inclusive) every `stride` steps, `batch_size`
    rows a batch (random rows with ``shuffle``, drawn from NumPy's global generator; windows
    reversed in time with ``reverse``).

    >>> gen = TimeseriesGenerator(np.arange(10), np.arange(10), length=3, batch_size=2)
    >>> gen[0]
    (array([[0, 1, 2], [1, 2, 3]]), array([3, 4]))
    """

    def __init__(self, data: Any, targets: Any, length: int, sampling_rate: int = 1,
                 stride: int = 1, start_index: int = 0, end_index: int | None = None,
                 shuffle: bool = False, reverse: bool = False, batch_size: int = 128):
        if len(data) != len(targets):
            raise ValueError(f"Data and targets have to be of same length. Data length is "
                             f"{len(data)} while target length is {len(targets)}")
        self.data = data
        self.targets = targets
        self.length = length
        self.sampling_rate = sampling_rate
        self.stride = stride
        self.start_index = start_index + length
        self.end_index = len(data) - 1 if end_index is None else end_index
        self.shuffle = shuffle
        self.reverse = reverse
        self.batch_size = batch_size
        if self.start_index > self.end_index:
            raise ValueError(f"`start_index+length={self.start_index} > "
                             f"end_index={self.end_index}` is disallowed, as no part of the "
                             "sequence would be left to be used as current step.")

    def __len__(self) -> int:
        span = self.batch_size * self.stride
        return (self.end_index - self.start_index + span) // span

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if self.shuffle:
            rows = np.random.randint(self.start_index, self.end_index + 1, size=self.batch_size)
        else:
            first = self.start_index + self.batch_size * self.stride * index
            rows = np.arange(first, min(first + self.batch_size * self.stride,
                                        self.end_index + 1), self.stride)
        samples = np.array([self.data[row - self.length:row:self.sampling_rate]
                            for row in rows])
        targets = np.array([self.targets[row] for row in rows])
        if self.reverse:
            return samples[:, ::-1, ...], targets
        return samples, targets

    def get_config(self) -> dict:
        """The arguments, with `data` and `targets` as JSON strings (as tf-keras)."""
        def as_json(values: Any, what: str) -> str:
            if type(values).__module__ == np.__name__:
                values = values.tolist()
            try:
                return json.dumps(values)
            except TypeError as e:
                raise TypeError(f"{what} not JSON Serializable: {values!r}") from e

        return {"data": as_json(self.data, "Data"),
                "targets": as_json(self.targets, "Targets"), "length": self.length,
                "sampling_rate": self.sampling_rate, "stride": self.stride,
                "start_index": self.start_index, "end_index": self.end_index,
                "shuffle": self.shuffle, "reverse": self.reverse,
                "batch_size": self.batch_size}

    def to_json(self, **kwargs: Any) -> str:
        """``{"class_name": "TimeseriesGenerator", "config": get_config()}`` as JSON."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)


def make_sampling_table(size: int, sampling_factor: float = 1e-5) -> np.ndarray:
    """word2vec's probability of keeping the word of frequency rank i (rank 0 counted as 1),
    from Zipf's law: ``min(1, sqrt(sampling_factor * (r (log r + 0.577) + 1/2 - 1/(12 r))))``.
    """
    rank = np.arange(size)
    rank[0] = 1
    inverse_frequency = rank * (np.log(rank) + 0.577) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inverse_frequency
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence: Any, vocabulary_size: int, window_size: int = 4,
              negative_samples: float = 1.0, shuffle: bool = True, categorical: bool = False,
              sampling_table: Any = None, seed: int | None = None) -> tuple[list, list]:
    """word2vec training couples from a sequence of word indices (0 is skipped): every
    ``[word, context]`` within `window_size` labelled 1, then ``negative_samples`` times as
    many ``[word, random index in [1, vocabulary_size - 1]]`` labelled 0 (``[0, 1]`` /
    ``[1, 0]`` with ``categorical``); a word is kept with probability
    ``sampling_table[word]``. With ``shuffle``, couples and labels are shuffled alike
    (reproducibly for a given `seed`)."""
    couples: list = []
    labels: list = []
    for i, word in enumerate(sequence):
        if not word or (sampling_table is not None and sampling_table[word] < random.random()):
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i and sequence[j]:
                couples.append([word, sequence[j]])
                labels.append([0, 1] if categorical else 1)
    if negative_samples > 0:
        count = int(len(labels) * negative_samples)
        words = [couple[0] for couple in couples]
        random.shuffle(words)
        couples += [[words[i % len(words)], random.randint(1, int(vocabulary_size - 1))]
                    for i in range(count)]
        labels += ([[1, 0]] if categorical else [0]) * count
    if shuffle:
        if seed is None:
            seed = random.randint(0, int(10e6))
        random.seed(seed)  # the same permutation for both lists
        random.shuffle(couples)
        random.seed(seed)
        random.shuffle(labels)
    return couples, labels
