"""Reductions over axis lists with keepdims."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op


def normalize_axes(axis: Any, rank: int | None) -> tuple | None:
    """Axis argument (None, int, list, tensor) -> sorted tuple of non-negative axes."""
    if axis is None:
        return None if rank is None else tuple(range(rank))
    if hasattr(axis, "numpy"):
        axis = axis.numpy()
    axes = np.atleast_1d(np.asarray(axis)).tolist()
    if rank is None:
        return tuple(axes)
    out = []
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise ValueError(f"axis {a} is out of range for a tensor of rank {rank}")
        out.append(a % rank if rank else 0)
    return tuple(sorted(set(out)))


def reduced_shape_rule(x, *, axis, keepdims):
    shape, dtype = x
    if shape is None:
        return None, dtype
    axes = range(len(shape)) if axis is None else axis
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape)), dtype
    return tuple(d for i, d in enumerate(shape) if i not in axes), dtype


def expand_reduced(g, x, axis, keepdims):
    """Broadcast gradient `g` of a reduction back over the reduced axes of `x`."""
    from tapeflow.ops.array_ops import reshape
    from tapeflow.ops.math_ops import _broadcast_like

    if not keepdims and axis:
        rank = x.shape.rank
        shape = g.shape.as_list() if g.shape.rank is not None else None
        if shape is not None and rank is not None:
            kept = [1 if i in axis else None for i in range(rank)]
            it = iter(shape)
            new = [1 if k == 1 else next(it) for k in kept]
            g = reshape(g, [-1 if d is None else d for d in new])
    return apply(_broadcast_like, g, x)


@op("Sum", shape=reduced_shape_rule)
def _sum(x, *, axis, keepdims):
    return np.sum(x, axis=axis, keepdims=keepdims)


@_sum.def_grad
def _(g, out, x, *, axis, keepdims):
    return expand_reduced(g, x, axis, keepdims)


@op("Mean", shape=reduced_shape_rule)
def _mean(x, *, axis, keepdims):
    r = np.mean(x, axis=axis, keepdims=keepdims)
    return r.astype(x.dtype) if x.dtype.kind in "iu" else r.astype(x.dtype, copy=False)


@_mean.def_grad
def _(g, out, x, *, axis, keepdims):
    from tapeflow.ops.math_ops import _size_ratio

    return expand_reduced(g, x, axis, keepdims) * _size_ratio(out, x)


def _reduce(kernel_op, input_tensor, axis, keepdims):
    x = input_tensor if hasattr(input_tensor, "dtype") else convert_to_tensor(input_tensor)
    axes = normalize_axes(axis, x.shape.rank)
    return apply(kernel_op, x, axis=axes, keepdims=bool(keepdims))


@export("math.reduce_sum", "reduce_sum")
def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None):
    """Sum over `axis` (all axes by default)."""
    return _reduce(_sum, input_tensor, axis, keepdims)


@export("math.reduce_mean", "reduce_mean")
def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None):
    """Mean over `axis` (integer inputs give a truncated integer mean, as TF)."""
    return _reduce(_mean, input_tensor, axis, keepdims)
