"""The ``tf.ragged`` functions: constant, range, stack, boolean_mask, map_flat_values..."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import math_ops, operators
from tapeflow.ragged import dispatch
from tapeflow.ragged import primitives as prim
from tapeflow.ragged.tensor import RaggedTensor


def _depth(x: Any) -> int:
    if isinstance(x, (list, tuple)):
        return 1 + builtins.max((_depth(e) for e in x), default=0)
    return 0


def constant(pylist: Any, dtype: Any = None, ragged_rank: int | None = None,
             inner_shape: Any = None, name: str | None = None,
             row_splits_dtype: Any = _dtypes.int64) -> Any:
    """A RaggedTensor from nested Python lists (rows may differ in length)."""
    if isinstance(pylist, RaggedTensor):
        return pylist
    depth = _depth(pylist)
    if inner_shape is not None:
        inner_rank = len(inner_shape)
    elif ragged_rank is not None:
        inner_rank = builtins.max(depth - 1 - ragged_rank, 0)
    else:
        inner_rank = 0
    if ragged_rank is None:
        ragged_rank = builtins.max(depth - 1 - inner_rank, 0)
    if ragged_rank == 0:
        return convert_to_tensor(pylist, dtype)
    splits_np = np.dtype(_dtypes.as_dtype(row_splits_dtype)._np)
    nested_splits = []
    level = list(pylist)
    for _ in builtins.range(ragged_rank):
        lengths = [len(row) for row in level]
        nested_splits.append(np.concatenate([[0], np.cumsum(lengths)]).astype(splits_np))
        level = [e for row in level for e in row]
    if dtype is None and not level:
        dtype = _dtypes.float32
    flat = convert_to_tensor(level, dtype) if level else convert_to_tensor(np.zeros(
        (0,) + tuple(inner_shape or ()), _dtypes.as_dtype(dtype)._np))
    if inner_shape is not None:
        flat = convert_to_tensor(np.reshape(flat.numpy(), (-1,) + tuple(inner_shape)), dtype)
    return RaggedTensor.from_nested_row_splits(flat, [convert_to_tensor(s)
                                                      for s in nested_splits])


def range(starts: Any, limits: Any = None, deltas: Any = 1, dtype: Any = None,  # noqa: A001
          name: str | None = None, row_splits_dtype: Any = _dtypes.int64) -> RaggedTensor:
    """Row i is tf.range(starts[i], limits[i], deltas[i])."""
    if limits is None:
        starts, limits = 0, starts
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
    ts = [x if isinstance(x, Tensor) else convert_to_tensor(x, dtype) for x in
          (starts, limits, deltas)]
    target = dtype or builtins.max((t.dtype for t in ts), key=lambda d: (
        d.is_floating, d.size if hasattr(d, "size") else 0))
    ts = [t if t.dtype is target else math_ops.cast(t, target) for t in ts]
    splits, values = apply(prim.ragged_range_kernel, *ts,
                           splits_dtype=_dtypes.as_dtype(row_splits_dtype))
    return RaggedTensor.from_row_splits(values, splits, validate=False)


def stack(values: list, axis: int = 0, name: str | None = None) -> RaggedTensor:
    """Stack tensors (ragged or dense) into one RaggedTensor along a new axis 0."""
    return dispatch.stack(values, axis)


def boolean_mask(data: Any, mask: Any, name: str | None = None) -> Any:
    """Keep the entries (rows, or values for a ragged mask) where `mask` is True."""
    return dispatch.boolean_mask(data, mask)


def map_flat_values(op: Callable, *args: Any, **kwargs: Any) -> Any:
    """Apply `op` to the flat values of the ragged arguments (which must share row splits)."""
    template = next((a for a in list(args) + list(kwargs.values())
                     if isinstance(a, RaggedTensor)), None)
    if template is None:
        return op(*args, **kwargs)

    def flat(x: Any) -> Any:
        if isinstance(x, RaggedTensor):
            dispatch._same_splits(template, x, "map_flat_values")
            return x.flat_values
        return x

    out = op(*[flat(a) for a in args], **{k: flat(v) for k, v in kwargs.items()})
    return template.with_flat_values(out)


def row_splits_to_segment_ids(splits: Any, name: str | None = None,
                              out_type: Any = None) -> Tensor:
    s = splits if isinstance(splits, Tensor) else convert_to_tensor(splits, _dtypes.int64)
    ids = apply(prim.row_ids_kernel, s)
    return ids if out_type is None else math_ops.cast(ids, out_type)


def segment_ids_to_row_splits(segment_ids: Any, num_segments: Any = None,
                              out_type: Any = None, name: str | None = None) -> Tensor:
    ids = segment_ids if isinstance(segment_ids, Tensor) else convert_to_tensor(
        segment_ids, _dtypes.int64)
    if num_segments is None:
        from tapeflow.ops import array_ops, reduce_ops

        num_segments = reduce_ops.reduce_max(array_ops.concat(
            [ids, convert_to_tensor([-1], ids.dtype)], 0)) + 1
    n = num_segments if isinstance(num_segments, Tensor) else convert_to_tensor(
        num_segments, ids.dtype)
    splits = apply(prim.splits_from_ids_kernel, ids, math_ops.cast(n, ids.dtype))
    return splits if out_type is None else math_ops.cast(splits, out_type)


for _name, _fn in operators._OPERATORS.items():
    if _name not in ("__getitem__", "__truediv__", "__rtruediv__"):  # see dispatch.truediv
        setattr(RaggedTensor, _name, _fn)
RaggedTensor.__eq__ = operators._eq
RaggedTensor.__ne__ = operators._ne
