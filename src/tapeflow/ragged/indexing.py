"""``rt[...]``: rows, row ranges, and per-row indexing/slicing of the ragged dimensions."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.ops import array_ops, gather_ops, math_ops
from tapeflow.ragged import primitives as prim
from tapeflow.ragged.tensor import RaggedTensor


def take_rows(values: Any, index: Tensor) -> Any:
    """values[index] along axis 0, for dense or ragged `values` (index a 1-D int tensor)."""
    if not isinstance(values, RaggedTensor):
        return gather_ops.gather(values, index)
    splits = values.row_splits
    index = math_ops.cast(index, splits.dtype)
    starts = gather_ops.gather(splits[:-1], index)
    limits = gather_ops.gather(splits[1:], index)
    new_splits, positions = apply(prim.ragged_range_kernel, starts, limits,
                                  array_ops.ones_like(starts), splits_dtype=splits.dtype)
    return RaggedTensor.from_row_splits(take_rows(values.values, positions), new_splits,
                                        validate=False)


def _row(rt: RaggedTensor, i: Any) -> Any:
    s = rt.row_splits
    if isinstance(i, int) or isinstance(i, EagerTensor):
        n = s.shape[0] - 1 if s.shape[0] is not None else None
        k = int(i)
        if n is not None and not -n <= k < n:
            raise errors.InvalidArgumentError(
                f"RaggedTensor index {k} is out of range for {n} rows\n{errors.user_line()}")
        i = k + n if k < 0 else k
    return _slice_rows(rt.values, s[i], s[i + 1])


def _slice_rows(values: Any, start: Any, stop: Any) -> Any:
    """values[start:stop] along axis 0, bounds possibly known only at run time."""
    from tapeflow.ops.creation_ops import range_

    if not (isinstance(start, EagerTensor) and isinstance(stop, EagerTensor)) and (
            isinstance(start, Tensor) or isinstance(stop, Tensor)):
        return take_rows(values, range_(start, stop))
    if isinstance(values, RaggedTensor):
        splits = values.row_splits[int(start):int(stop) + 1]
        return RaggedTensor.from_row_splits(_slice_rows(values.values, splits[0], splits[-1]),
                                            splits - splits[0], validate=False)
    return values[int(start):int(stop)]


def _row_range(rt: RaggedTensor, key: slice) -> RaggedTensor:
    s = rt.row_splits
    n = rt.shape[0]
    if n is not None:
        start, stop, step = key.indices(n)
        if step != 1:
            return take_rows(rt, convert_to_tensor(np.arange(start, stop, step, dtype=np.int64)))
        splits = s[start:max(stop, start) + 1]
    else:
        if key.step not in (None, 1) or any(isinstance(b, int) and b < 0
                                             for b in (key.start, key.stop)):
            raise NotImplementedError("RaggedTensor row slices with negative bounds or a step "
                                      "need a known number of rows")
        start = key.start or 0
        splits = s[start:] if key.stop is None else s[start:key.stop + 1]
    values = _slice_rows(rt.values, splits[0], splits[-1])
    return RaggedTensor.from_row_splits(values, splits - splits[0], validate=False)


def _inner(values: Any, rest: tuple) -> Any:
    """Apply `rest` to dims 1.. of `values` (dense or ragged), keeping dim 0."""
    if not rest:
        return values
    return values[(slice(None),) + rest]


def getitem(rt: RaggedTensor, key: Any) -> Any:
    key = key if isinstance(key, tuple) else (key,)
    if not key:
        return rt
    if any(k is Ellipsis for k in key):  # ... stands for the dims the other indices skip
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = rt.shape.rank - sum(k is not None for k in key if k is not Ellipsis)
        key = key[:at] + (slice(None),) * max(fill, 0) + key[at + 1:]
        if not key:
            return rt
    if any(k is None for k in key):  # tf.newaxis: index without it, then insert the dims
        result = getitem(rt, tuple(k for k in key if k is not None))
        kept = 0  # output dims so far (an integer index drops its dim)
        for k in key:
            if k is None:
                import tapeflow  # the public expand_dims: its ragged dispatch

                result = tapeflow.expand_dims(result, kept)
            if k is None or isinstance(k, slice):
                kept += 1
        return result
    first, rest = key[0], key[1:]
    if isinstance(first, slice):
        rows = rt if first == slice(None) else _row_range(rt, first)
        return _per_row(rows, rest) if rest else rows
    if isinstance(first, (int, np.integer)) or (isinstance(first, Tensor)
                                                and first.shape.rank == 0):
        row = _row(rt, first if isinstance(first, Tensor) else int(first))
        return row[rest] if rest else row
    raise TypeError(f"RaggedTensor indices must be ints, scalar tensors or slices, got {first!r}")


def _per_row(rt: RaggedTensor, key: tuple) -> Any:
    """Index dim 1 (ragged) of every row with key[0], then dims 2.. with key[1:]."""
    item, rest = key[0], key[1:]
    splits = rt.row_splits
    lengths = splits[1:] - splits[:-1]
    if isinstance(item, slice):
        if item == slice(None):
            return rt.with_values(_inner(rt.values, rest)) if rest else rt
        if item.step not in (None, 1):
            raise NotImplementedError("per-row RaggedTensor slices with a step")
        start = _clip_bound(item.start, lengths, 0)
        stop = _clip_bound(item.stop, lengths, None)
        stop = math_ops.maximum(stop, start)
        starts, limits = splits[:-1] + start, splits[:-1] + stop
        new_splits, positions = apply(prim.ragged_range_kernel, starts, limits,
                                      array_ops.ones_like(starts), splits_dtype=splits.dtype)
        values = take_rows(rt.values, positions)
        return RaggedTensor.from_row_splits(_inner(values, rest), new_splits, validate=False)
    if isinstance(item, (int, np.integer)) or isinstance(item, Tensor):
        # as TF: rows of different lengths have no common column
        raise ValueError(f"Cannot index into an inner ragged dimension (index {item!r} on "
                         f"dimension 1 of a RaggedTensor of shape {rt.shape}).\n"
                         f"{errors.user_line()}")
    raise TypeError(f"unsupported RaggedTensor index {item!r}")


def _clip_bound(bound: Any, lengths: Tensor, default: Any) -> Tensor:
    """A slice bound made per-row: negative counts from each row's end, clipped to [0, len]."""
    if bound is None:
        return array_ops.zeros_like(lengths) if default == 0 else lengths
    b = math_ops.cast(convert_to_tensor(bound) if not isinstance(bound, Tensor) else bound,
                      lengths.dtype)
    b = math_ops.where(math_ops.less(b, 0), lengths + b, b + array_ops.zeros_like(lengths))
    return math_ops.minimum(math_ops.maximum(b, array_ops.zeros_like(lengths)), lengths)

