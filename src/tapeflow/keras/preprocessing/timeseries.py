"""``tf.keras.utils.timeseries_dataset_from_array``: sliding windows over an array as a batched
``tf.data.Dataset``, with Keras's start positions, strides, sampling rate and targets."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.data.dataset import Dataset


def timeseries_dataset_from_array(data: Any, targets: Any, sequence_length: int,
                                  sequence_stride: int = 1, sampling_rate: int = 1,
                                  batch_size: int | None = 128, shuffle: bool = False,
                                  seed: int | None = None, start_index: int | None = None,
                                  end_index: int | None = None) -> Dataset:
    """Windows data[s : s + sequence_length * sampling_rate : sampling_rate] for start s every
    `sequence_stride`; window s is paired with targets[s] (targets may be None)."""
    data = np.asarray(data)
    start = 0 if start_index is None else int(start_index)
    end = len(data) if end_index is None else int(end_index)
    for name, value in (("sequence_length", sequence_length), ("sequence_stride",
                        sequence_stride), ("sampling_rate", sampling_rate)):
        if int(value) <= 0:
            raise ValueError(f"timeseries_dataset_from_array: `{name}` must be > 0, got {value}")
    if not 0 <= start < len(data) or not start < end <= len(data):
        raise ValueError(f"timeseries_dataset_from_array: need 0 <= start_index < end_index <= "
                         f"len(data) = {len(data)}, got start_index={start_index}, "
                         f"end_index={end_index}")
    count = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets)
        count = min(count, len(targets))
    positions = np.arange(0, max(count, 0), sequence_stride, dtype=np.int64)
    if shuffle:
        np.random.RandomState(seed if seed is not None else np.random.randint(1_000_000)) \
            .shuffle(positions)
    window = positions[:, None] + np.arange(sequence_length) * sampling_rate + start
    windows = data[window] if len(positions) else np.zeros((0, sequence_length) + data.shape[1:],
                                                           data.dtype)
    parts = windows if targets is None else (windows, targets[start + positions])
    dataset = Dataset.from_tensor_slices(parts)
    return dataset if batch_size is None else dataset.batch(int(batch_size))
