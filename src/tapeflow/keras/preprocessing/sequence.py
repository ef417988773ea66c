"""``tf.keras.utils.pad_sequences`` (also ``keras.preprocessing.sequence``): lists of varying
length to one array, padded and truncated at the start ('pre') or the end ('post')."""

from __future__ import annotations

from typing import Any

import numpy as np


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
