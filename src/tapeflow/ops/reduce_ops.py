"""Reductions over axis lists with keepdims."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, eager_output, kernel_error, op
from tapeflow.framework.tensor import EagerTensor
from tapeflow.ops.array_ops import _tensor


def normalize_axes(axis: Any, rank: int | None, x: Any = None, op_name: str = "reduce"
                   ) -> tuple | None:
    """Axis argument (None, int, list, tensor) -> sorted tuple of non-negative axes.

    An axis out of range names `op_name`, the input `x`'s shape and dtype, and the user's line.
    """
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
            what = "" if x is None else f" (input {x.dtype.name}{x.shape.as_list()})"
            raise errors.InvalidArgumentError(
                None, op_name, f"{op_name}: axis {a} is out of range for a tensor of rank "
                f"{rank}{what}; valid axes are {-rank} to {max(rank - 1, 0)}"
                f"\n{errors.user_line()}")
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
    from tapeflow.ops.array_ops import expand_dims
    from tapeflow.ops.math_ops import _broadcast_like

    if not keepdims and axis and x.shape.rank is not None:
        for a in sorted(axis):  # ascending: each insert leaves the later positions right
            g = expand_dims(g, a)  # (a reshape would need every other dim known)
    return apply(_broadcast_like, g, x)


def _reduce_emit(node, args: list[str], bind) -> str | None:
    """Float sums/means over static axes as one ``np.add.reduce`` (np.sum/np.mean minus their
    Python-level argument handling; Mean divides by the count exactly as np.mean does)."""
    x, out = node.inputs[0], node.outputs[0]
    if not x.dtype.is_floating or x.shape.rank is None:
        return None
    axis, keepdims = node.attrs["axis"], node.attrs["keepdims"]
    axes = tuple(range(x.shape.rank)) if axis is None else tuple(axis)
    expr = f"{bind(np.add.reduce)}({args[0]}, {bind(axes, 'axes')}, None, None, {bool(keepdims)})"
    if node.op is _sum:
        return expr
    if x.dtype.size < 4:  # np.mean adds half floats up in float32: the kernel's own call
        return None
    dims = [x.shape[a] for a in axes]
    if any(d is None for d in dims) or not out.shape.is_fully_defined():
        return None
    count = x.dtype.as_numpy_dtype(int(np.prod(dims, dtype=np.int64)))
    return f"{bind(np.true_divide)}({expr}, {bind(count, 'count')})"


@op("Sum", shape=reduced_shape_rule, emit=_reduce_emit, reduction="sum")
def _sum(x, *, axis, keepdims):
    # dtype=x.dtype: NumPy would widen int32 sums to int64; TF keeps the input dtype
    return np.add.reduce(x, axis, x.dtype, None, keepdims)


@_sum.def_grad
def _(g, out, x, *, axis, keepdims):
    return expand_reduced(g, x, axis, keepdims)


@op("Mean", shape=reduced_shape_rule, emit=_reduce_emit, reduction="mean")
def _mean(x, *, axis, keepdims):
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        # np.mean's own arithmetic for float32/64 (the sum in x's dtype over the count in x's
        # dtype) without its Python wrapper: 1.5 us instead of 4.5 us on float32[10]
        count = x.size if axis is None or len(axis) == x.ndim else math.prod(
            [x.shape[a] for a in axis])
        if count:  # (an empty mean: np.mean's warning and NaN, below)
            return np.true_divide(np.add.reduce(x, axis, None, None, keepdims),
                                  x.dtype.type(count))
    r = np.mean(x, axis=axis, keepdims=keepdims)
    return r.astype(x.dtype) if x.dtype.kind in "iu" else r.astype(x.dtype, copy=False)


@_mean.def_grad
def _(g, out, x, *, axis, keepdims):
    from tapeflow.ops.math_ops import _size_ratio

    return expand_reduced(g, x, axis, keepdims) * _size_ratio(out, x)


_ALL_AXES = [tuple(range(r)) for r in range(9)]


def _reduce(kernel_op, input_tensor, axis, keepdims):
    if type(input_tensor) is EagerTensor:
        x = input_tensor._value
        if axis is None and x.ndim < 9:  # every axis: the usual case
            axes = _ALL_AXES[x.ndim]
        else:
            axes = tuple(range(x.ndim)) if axis is None else normalize_axes(
                axis, x.ndim, input_tensor, kernel_op.name)
        keepdims = bool(keepdims)
        if _state.plain:  # eager, no tape, no tf.device: the kernel at once, as apply runs it
            try:
                out = kernel_op.kernel(x, axis=axes, keepdims=keepdims)
            except Exception as e:
                raise kernel_error(kernel_op, [x], {"axis": axes, "keepdims": keepdims},
                                   e) from e
            return eager_output(kernel_op, out)
        return apply(kernel_op, input_tensor, axis=axes, keepdims=keepdims)
    x = _tensor(input_tensor)
    rank = x.ndim
    axes = tuple(range(rank)) if axis is None and rank is not None else normalize_axes(
        axis, rank, x, kernel_op.name)
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


# --- max / min / prod -------------------------------------------------------------------------


@op("Max", shape=reduced_shape_rule)
def _max(x, *, axis, keepdims):
    return np.max(x, axis=axis, keepdims=keepdims)


@op("Min", shape=reduced_shape_rule)
def _min(x, *, axis, keepdims):
    return np.min(x, axis=axis, keepdims=keepdims)


def _extremum_grad(g, out, x, *, axis, keepdims):
    """The gradient goes to the elements equal to the extremum, split evenly among ties (TF)."""
    from tapeflow.ops.math_ops import cast, equal

    hit = cast(equal(x, expand_reduced(out, x, axis, keepdims)), g.dtype)
    count = expand_reduced(apply(_sum, hit, axis=axis, keepdims=keepdims), x, axis, keepdims)
    return expand_reduced(g, x, axis, keepdims) * hit / count


_max.def_grad(_extremum_grad)
_min.def_grad(_extremum_grad)


@op("Prod", shape=reduced_shape_rule)
def _prod(x, *, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@_prod.def_grad
def _(g, out, x, *, axis, keepdims):
    return expand_reduced(g, x, axis, keepdims) * _product_of_others(x, axis)


def _product_of_others(x, axis):
    """For each element, the product of the others in its reduction group (exact at zeros).

    Dividing the product by x would give NaN where x == 0; TF also uses exclusive cumprods.
    """
    from tapeflow.ops.array_ops import concat, reshape, reshape_like, shape, transpose

    rank = x.shape.rank
    axes = tuple(range(rank)) if axis is None else axis
    if len(axes) == 1:
        a = axes[0]
        return cumprod(x, a, exclusive=True) * cumprod(x, a, exclusive=True, reverse=True)
    kept = [i for i in range(rank) if i not in axes]
    perm = kept + list(axes)
    xt = transpose(x, perm)
    kept_shape = [x.shape[i] for i in kept]
    if any(d is None for d in kept_shape):  # the kept dims' sizes from the running graph
        kept_shape = concat([shape(xt)[:len(kept)], [-1]], 0)
    else:
        kept_shape = kept_shape + [-1]
    flat = reshape(xt, kept_shape)
    others = cumprod(flat, -1, exclusive=True) * cumprod(flat, -1, exclusive=True, reverse=True)
    return transpose(reshape_like(others, xt), np.argsort(perm).tolist())


# --- any / all --------------------------------------------------------------------------------


def _bool_reduction(fn):
    def kernel(x, *, axis, keepdims):
        if x.dtype.kind != "b":
            raise TypeError(f"expects a bool input, got {x.dtype}")
        return fn(x, axis=axis, keepdims=keepdims)

    return kernel


_any = op("Any", shape=reduced_shape_rule)(_bool_reduction(np.any))
_all = op("All", shape=reduced_shape_rule)(_bool_reduction(np.all))


# --- argmax / argmin --------------------------------------------------------------------------


def _arg_rule(x, *, axis, output_type):
    shape, _ = x
    if shape is None:
        return None, output_type
    return tuple(d for i, d in enumerate(shape) if i != axis), output_type


@op("ArgMax", shape=_arg_rule)
def _argmax(x, *, axis, output_type):
    return np.argmax(x, axis=axis).astype(output_type._np)


@op("ArgMin", shape=_arg_rule)
def _argmin(x, *, axis, output_type):
    return np.argmin(x, axis=axis).astype(output_type._np)


# --- cumulative sum / product -----------------------------------------------------------------


def _scan(fn, identity_value):
    def kernel(x, *, axis, exclusive, reverse):
        if reverse:
            x = np.flip(x, axis)
        out = fn(x, axis=axis, dtype=x.dtype)
        if exclusive:
            first = np.full_like(np.take(x, [0], axis=axis), identity_value)
            out = np.concatenate([first, np.delete(out, -1, axis=axis)], axis=axis)
        return np.flip(out, axis) if reverse else out

    return kernel


_cumsum = op("Cumsum", shape=lambda x, **attrs: x)(_scan(np.cumsum, 0))
_cumprod = op("Cumprod", shape=lambda x, **attrs: x)(_scan(np.cumprod, 1))


@_cumsum.def_grad
def _(g, out, x, *, axis, exclusive, reverse):
    return apply(_cumsum, g, axis=axis, exclusive=exclusive, reverse=not reverse)


@_cumprod.def_grad
def _(g, out, x, *, axis, exclusive, reverse):
    # NOTE: divides by x, as TF's rule does: inf/NaN where x == 0
    summed = apply(_cumsum, out * g, axis=axis, exclusive=exclusive, reverse=not reverse)
    return summed / x


# --- public API (continued) -------------------------------------------------------------------


@export("math.reduce_max", "reduce_max")
def reduce_max(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None):
    """Maximum over `axis`; ties share the gradient evenly."""
    return _reduce(_max, input_tensor, axis, keepdims)


@export("math.reduce_min", "reduce_min")
def reduce_min(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None):
    """Minimum over `axis`; ties share the gradient evenly."""
    return _reduce(_min, input_tensor, axis, keepdims)


@export("math.reduce_prod", "reduce_prod")
def reduce_prod(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None):
    """Product over `axis` (gradient exact where some elements are zero)."""
    return _reduce(_prod, input_tensor, axis, keepdims)


@export("math.reduce_any", "reduce_any")
def reduce_any(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None):
    """Logical OR over `axis` of a bool tensor."""
    return _reduce(_any, input_tensor, axis, keepdims)


@export("math.reduce_all", "reduce_all")
def reduce_all(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None):
    """Logical AND over `axis` of a bool tensor."""
    return _reduce(_all, input_tensor, axis, keepdims)


@export("math.reduce_logsumexp", "reduce_logsumexp")
def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                     name: str | None = None):
    """log(sum(exp(x))) computed stably: the max is subtracted first (a constant, no gradient)."""
    from tapeflow.ops.array_ops import reshape_like, stop_gradient, zeros_like
    from tapeflow.ops.math_ops import exp, is_finite, log, where

    x = _tensor(input_tensor)
    raw_max = reduce_max(x, axis, keepdims=True)
    shift = stop_gradient(where(is_finite(raw_max), raw_max, zeros_like(raw_max)))
    result = log(reduce_sum(exp(x - shift), axis, keepdims=keepdims))
    return result + reshape_like(shift, result)


@export("math.reduce_variance")
def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None):
    """Population variance over `axis`."""
    x = _tensor(input_tensor)
    centered = x - reduce_mean(x, axis, keepdims=True)
    return reduce_mean(centered * centered, axis, keepdims=keepdims)


@export("math.reduce_std")
def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None):
    """Population standard deviation over `axis`."""
    from tapeflow.ops.math_ops import sqrt

    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def _arg(kernel_op, input, axis, output_type):  # noqa: A002
    from tapeflow.framework import dtypes as _dtypes

    x = _tensor(input)
    rank = x.shape.rank
    axis = 0 if axis is None else int(axis.numpy() if hasattr(axis, "numpy") else axis)
    if rank is not None:
        if not -rank <= axis < max(rank, 1):
            raise ValueError(f"{kernel_op.name}: axis {axis} is out of range for a tensor of "
                             f"rank {rank}")
        axis %= max(rank, 1)
    return apply(kernel_op, x, axis=axis, output_type=_dtypes.as_dtype(output_type))


@export("math.argmax", "argmax")
def argmax(input: Any, axis: Any = None, output_type: Any = "int64",  # noqa: A002
           name: str | None = None):
    """Index of the largest value along `axis` (default 0), int64 unless told otherwise."""
    return _arg(_argmax, input, axis, output_type)


@export("math.argmin", "argmin")
def argmin(input: Any, axis: Any = None, output_type: Any = "int64",  # noqa: A002
           name: str | None = None):
    """Index of the smallest value along `axis` (default 0), int64 unless told otherwise."""
    return _arg(_argmin, input, axis, output_type)


def _scan_public(kernel_op, x, axis, exclusive, reverse):
    x = _tensor(x)
    axis = int(axis.numpy() if hasattr(axis, "numpy") else axis)
    rank = x.shape.rank
    if rank is not None:
        if not -rank <= axis < rank:
            raise ValueError(f"{kernel_op.name}: axis {axis} is out of range for a tensor of "
                             f"rank {rank}")
        axis %= rank
    return apply(kernel_op, x, axis=axis, exclusive=bool(exclusive), reverse=bool(reverse))


@export("math.cumsum", "cumsum")
def cumsum(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None):
    """Running sum along `axis`; `exclusive` leaves out the current element."""
    return _scan_public(_cumsum, x, axis, exclusive, reverse)


@export("math.cumprod")
def cumprod(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None):
    """Running product along `axis`; `exclusive` leaves out the current element."""
    return _scan_public(_cumprod, x, axis, exclusive, reverse)
