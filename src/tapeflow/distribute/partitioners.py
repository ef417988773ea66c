"""``tf.distribute.experimental.partitioners``: how many shards (along axis 0) a variable
created under a ``ParameterServerStrategy`` scope is split into."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class Partitioner:
    """``partitioner(shape, dtype, axis=0)`` -> shards per axis (only `axis` above 1)."""

    def __call__(self, shape: Any, dtype: Any, axis: int = 0) -> list[int]:
        shape = [int(d) for d in shape]
        if not shape:
            return []
        shards = max(1, min(self._num_shards(shape, _itemsize(dtype, self), axis), shape[axis]))
        return [shards if i == axis else 1 for i in range(len(shape))]

    def _num_shards(self, shape: list[int], itemsize: int, axis: int) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement _num_shards")


def _itemsize(dtype: Any, partitioner: Any) -> int:
    name = getattr(dtype, "name", str(dtype))
    if name == "string":
        return getattr(partitioner, "_bytes_per_string", 16)
    return np.dtype(getattr(dtype, "_np", dtype)).itemsize


class FixedShardsPartitioner(Partitioner):
    """Always `num_shards` shards (fewer if axis 0 is shorter)."""

    def __init__(self, num_shards: int):
        if num_shards < 1:
            raise ValueError(f"FixedShardsPartitioner: num_shards must be >= 1, got {num_shards}")
        self._num = int(num_shards)

    def _num_shards(self, shape: list[int], itemsize: int, axis: int) -> int:
        return self._num


class MinSizePartitioner(Partitioner):
    """As many shards as keep each at least `min_shard_bytes`, at most `max_shards`."""

    def __init__(self, min_shard_bytes: int = 256 << 10, max_shards: int = 1,
                 bytes_per_string: int = 16):
        if min_shard_bytes < 1 or max_shards < 1 or bytes_per_string < 1:
            raise ValueError("MinSizePartitioner: min_shard_bytes, max_shards and "
                             "bytes_per_string must be >= 1")
        self._min, self._max, self._bytes_per_string = min_shard_bytes, max_shards, \
            bytes_per_string

    def _num_shards(self, shape: list[int], itemsize: int, axis: int) -> int:
        total = math.prod(shape) * itemsize
        return min(self._max, total // self._min)


class MaxSizePartitioner(Partitioner):
    """As few shards as keep each at most `max_shard_bytes` (at most `max_shards`)."""

    def __init__(self, max_shard_bytes: int, max_shards: int | None = None,
                 bytes_per_string: int = 16):
        if max_shard_bytes < 1 or (max_shards is not None and max_shards < 1):
            raise ValueError("MaxSizePartitioner: max_shard_bytes and max_shards must be >= 1")
        self._max_bytes, self._max, self._bytes_per_string = max_shard_bytes, max_shards, \
            bytes_per_string

    def _num_shards(self, shape: list[int], itemsize: int, axis: int) -> int:
        row = math.prod(shape) // shape[axis] * itemsize
        rows_per_shard = max(1, self._max_bytes // max(row, 1))
        n = math.ceil(shape[axis] / rows_per_shard)
        return n if self._max is None else min(n, self._max)
