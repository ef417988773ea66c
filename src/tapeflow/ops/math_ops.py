"""Elementwise arithmetic, comparisons and casts: kernel, shape rule and gradient side by side."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import elementwise, same_as_first

# --- gradient plumbing: reduce a broadcast gradient back to an input's shape -------------------


@op("SumToShapeOf", shape=lambda g, x: x)
def _sum_to_shape_of(g, x):
    """Sum `g` over the axes along which `x` was broadcast (runtime shapes: works in graphs)."""
    if g.shape == x.shape:
        return g
    extra = g.ndim - x.ndim
    axes = tuple(range(extra)) + tuple(
        i + extra for i, d in enumerate(x.shape) if d == 1 and g.shape[i + extra] != 1)
    return np.sum(g, axis=axes, keepdims=False).reshape(x.shape) if axes else g.reshape(x.shape)


@op("BroadcastLike", shape=lambda g, x: x)
def _broadcast_like(g, x):
    return np.broadcast_to(g, x.shape)


@_sum_to_shape_of.def_grad
def _(g, out, grad_in, x):
    return _broadcast_like(g, grad_in), None


@_broadcast_like.def_grad
def _(g, out, small, x):
    return _sum_to_shape_of(g, small), None


def unbroadcast(g, x):
    """Gradient `g` of a broadcast result, reduced to the shape of input `x`."""
    gs, xs = g.shape, x.shape
    if gs.is_fully_defined() and gs == xs:
        return g
    return _sum_to_shape_of(g, x)


# --- binary arithmetic ------------------------------------------------------------------------


_add = op("AddV2", elementwise=True, shape=elementwise)(np.add)


@_add.def_grad
def _(g, out, x, y):
    return unbroadcast(g, x), unbroadcast(g, y)


_sub = op("Sub", elementwise=True, shape=elementwise)(np.subtract)


@_sub.def_grad
def _(g, out, x, y):
    return unbroadcast(g, x), unbroadcast(-g, y)


_mul = op("Mul", elementwise=True, shape=elementwise)(np.multiply)


@_mul.def_grad
def _(g, out, x, y):
    return unbroadcast(g * y, x), unbroadcast(g * x, y)


@op("RealDiv", elementwise=True, shape=elementwise)
def _div(x, y):
    if x.dtype.kind in "iu":  # integer division truncating toward zero, as TF's Div
        return np.trunc(np.true_divide(x, y)).astype(x.dtype)
    return np.true_divide(x, y)


@_div.def_grad
def _(g, out, x, y):
    return unbroadcast(g / y, x), unbroadcast(-g * x / (y * y), y)


_neg = op("Neg", elementwise=True, shape=same_as_first)(np.negative)


@_neg.def_grad
def _(g, out, x):
    return -g


@op("Cast", shape=lambda x, *, dtype: (x[0], dtype))
def _cast(x, *, dtype):
    if dtype is _dtypes.string:
        raise TypeError("Cast to string is not supported; use tf.strings.as_string")
    if x.dtype == object:
        raise TypeError("Cast from string is not supported; use tf.strings.to_number")
    return x.astype(dtype._np, copy=False)


@_cast.def_grad
def _(g, out, x, *, dtype):
    if not (x.dtype.is_floating or x.dtype.is_complex) or not (dtype.is_floating or dtype.is_complex):
        return None
    return cast(g, x.dtype)


# --- public API ------------------------------------------------------------------------------


@export("math.add", "add")
def add(x: Any, y: Any, name: str | None = None):
    """Elementwise x + y with broadcasting (both must share a dtype)."""
    return apply(_add, x, y)


@export("math.subtract", "subtract")
def subtract(x: Any, y: Any, name: str | None = None):
    """Elementwise x - y."""
    return apply(_sub, x, y)


@export("math.multiply", "multiply")
def multiply(x: Any, y: Any, name: str | None = None):
    """Elementwise x * y."""
    return apply(_mul, x, y)


@export("math.negative", "negative")
def negative(x: Any, name: str | None = None):
    """Elementwise -x."""
    return apply(_neg, x)


@export("cast", "dtypes.cast")
def cast(x: Any, dtype: Any, name: str | None = None):
    """Convert `x` to `dtype` (float -> int truncates, as TF)."""
    from tapeflow.framework.constant import convert_to_tensor

    dtype = _dtypes.as_dtype(dtype)
    if not hasattr(x, "dtype"):
        x = convert_to_tensor(x)
    if x.dtype is dtype:
        return x if not hasattr(x, "assign") else x.read_value()
    return apply(_cast, x, dtype=dtype)


@export("math.truediv", "truediv")
def truediv(x: Any, y: Any, name: str | None = None):
    """x / y; integer inputs are first cast to float (int32 -> float64, as TF)."""
    from tapeflow.framework.constant import convert_to_tensor

    if not hasattr(x, "dtype"):
        x = convert_to_tensor(x, dtype_hint=getattr(y, "dtype", None))
    if not hasattr(y, "dtype"):
        y = convert_to_tensor(y, dtype_hint=x.dtype)
    if x.dtype.is_integer:
        target = _dtypes.float32 if x.dtype.size <= 2 else _dtypes.float64
        x, y = cast(x, target), cast(y, target)
    return apply(_div, x, y)


@export("math.divide", "divide")
def divide(x: Any, y: Any, name: str | None = None):
    """x / y (TF's ``tf.divide``, true division)."""
    return truediv(x, y)


@op("SizeRatio", shape=lambda out, x: ((), out[1]))
def _size_ratio_op(out, x):
    """size(out) / size(x) as a scalar of out's dtype (the mean's gradient scale)."""
    return np.asarray(out.size / max(x.size, 1), dtype=out.dtype)


def _size_ratio(out, x):
    return apply(_size_ratio_op, out, x)
