"""Tensors made from scratch: ``tf.range``, ``tf.linspace``, ``tf.eye``, ``tf.one_hot``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops.array_ops import _axis, _is_symbolic, _python_int, _tensor, broadcast_to, concat

# --- range / linspace / eye / one_hot ---------------------------------------------------------


def _range_count(start, limit, delta) -> int:
    if delta == 0:
        raise ValueError("Range: delta must not be 0")
    return max(0, int(np.ceil((limit - start) / delta)))


@op("Range", shape=lambda *, start, limit, delta, dtype: (
    (_range_count(start, limit, delta),), dtype))
def _range(*, start, limit, delta, dtype):
    n = _range_count(start, limit, delta)
    return (start + np.arange(n, dtype=np.float64 if dtype.is_floating else np.int64)
            * delta).astype(dtype._np)


@op("RangeDynamic", shape=lambda start, limit, delta: ((None,), start[1]))
def _range_dynamic(start, limit, delta):
    return np.arange(start, limit, delta, dtype=start.dtype)


@export("range")
def range_(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,
          name: str = "range"):
    """[start, start + delta, ...) up to `limit`; ints give int32, floats float32 (as TF)."""
    if limit is None:
        start, limit = 0, start
    args = [start, limit, delta]
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
    else:
        tensor_dtypes = [_dtypes.as_dtype(a.dtype) for a in args if hasattr(a, "dtype")]
        order = [_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64]
        if tensor_dtypes:
            dtype = max(tensor_dtypes, key=lambda d: order.index(d) if d in order else -1)
        else:
            float_arg = any(isinstance(a, (float, np.floating)) for a in args)
            dtype = _dtypes.float32 if float_arg else _dtypes.int32
    if any(_is_symbolic(a) for a in args):
        from tapeflow.ops.math_ops import cast

        s, lim, d = (cast(_tensor(a), dtype) for a in args)
        return apply(_range_dynamic, s, lim, d)
    values = [a.numpy() if hasattr(a, "numpy") else a for a in args]
    py = [float(v) if dtype.is_floating else int(v) for v in values]
    return apply(_range, start=py[0], limit=py[1], delta=py[2], dtype=dtype)


def _linspace_shape(start, stop, *, num, axis):
    shape = start[0] if start[0] is not None else stop[0]
    if shape is None:
        return None, start[1]
    shape = tuple(shape)
    at = axis if axis >= 0 else len(shape) + 1 + axis
    return shape[:at] + (num,) + shape[at:], start[1]


@op("LinSpace", same_dtype=True, shape=_linspace_shape)
def _linspace(start, stop, *, num, axis):
    return np.linspace(start, stop, num, axis=axis).astype(start.dtype, copy=False)


@export("linspace", "lin_space")
def linspace(start: Any, stop: Any, num: Any, name: str | None = None, axis: int = 0):
    """`num` evenly spaced values from start to stop inclusive, along `axis` for tensor ends.

    Integer ends give float64, as in TensorFlow.
    """
    from tapeflow.ops.math_ops import cast

    s = _tensor(start)
    if not s.dtype.is_floating:
        s = cast(s, _dtypes.float64)
    e = _tensor(stop, s.dtype)
    if e.dtype is not s.dtype:
        e = cast(e, s.dtype)
    return apply(_linspace, s, e, num=_python_int(num, "num"), axis=axis)


@op("Eye", shape=lambda *, rows, cols, dtype: ((rows, cols), dtype))
def _eye(*, rows, cols, dtype):
    return np.eye(rows, cols, dtype=dtype._np)


@export("eye", "linalg.eye")
def eye(num_rows: int, num_columns: int | None = None, batch_shape: Any = None,
        dtype: Any = _dtypes.float32, name: str | None = None):
    """Identity matrix (num_rows x num_columns), repeated over `batch_shape` when given."""
    rows = _python_int(num_rows, "num_rows")
    cols = rows if num_columns is None else _python_int(num_columns, "num_columns")
    out = apply(_eye, rows=rows, cols=cols, dtype=_dtypes.as_dtype(dtype))
    if batch_shape is None:
        return out
    if _is_symbolic(batch_shape):  # a shape tensor known only when the graph runs
        return broadcast_to(out, concat([batch_shape, [rows, cols]], 0))
    batch = [_python_int(d, "batch_shape") for d in np.asarray(
        batch_shape.numpy() if hasattr(batch_shape, "numpy") else batch_shape).reshape(-1)]
    return broadcast_to(out, [*batch, rows, cols])


@op("OneHot", shape=lambda indices, *, depth, on_value, off_value, axis, dtype: (
    None if indices[0] is None else tuple(indices[0][:axis]) + (depth,)
    + tuple(indices[0][axis:]), dtype))
def _one_hot(indices, *, depth, on_value, off_value, axis, dtype):
    hot = np.expand_dims(indices, -1) == np.arange(depth)
    out = np.where(hot, on_value, off_value).astype(dtype._np)
    return np.moveaxis(out, -1, axis)


@export("one_hot")
def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None,
            axis: int | None = None, dtype: Any = None, name: str | None = None):
    """A new dim of size `depth`: on_value at each index, off_value elsewhere (float32)."""
    idx = _tensor(indices)
    if not idx.dtype.is_integer:
        raise TypeError(f"OneHot: indices must be integers (int32, int64, uint8), got a "
                        f"{idx.dtype.name} tensor of shape {idx.shape}; cast them with "
                        f"tf.cast(indices, tf.int32)\n{errors.user_line()}")
    if dtype is None:
        given = next((v for v in (on_value, off_value) if v is not None), None)
        dtype = _tensor(given).dtype if given is not None else _dtypes.float32
    dtype = _dtypes.as_dtype(dtype)
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    on, off = (v.numpy() if hasattr(v, "numpy") else v for v in (on, off))
    rank = idx.shape.rank
    axis = rank if axis is None or axis == -1 else _axis(axis, rank, "OneHot", extra=1)
    return apply(_one_hot, idx, depth=_python_int(depth, "depth"), on_value=on, off_value=off,
                 axis=axis, dtype=dtype)
