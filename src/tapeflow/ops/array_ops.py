"""Shape-changing and data-movement ops: reshape, transpose, stack, gather, fills ..."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import same_as_first


def _shape_arg(shape: Any) -> tuple:
    """A static shape from a list/tuple/TensorShape/eager tensor (attributes are Python values)."""
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    elif hasattr(shape, "numpy"):
        shape = shape.numpy().tolist()
    elif isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(-1 if d is None else int(d) for d in shape)


# --- reshape ----------------------------------------------------------------------------------


def _reshape_rule(x, *, shape):
    in_shape, dtype = x
    if -1 not in shape:
        return tuple(shape), dtype
    if in_shape is not None and all(d is not None for d in in_shape):
        known = int(np.prod([d for d in shape if d != -1]))
        total = int(np.prod(in_shape))
        return tuple(total // known if d == -1 and known else d for d in shape), dtype
    return tuple(None if d == -1 else d for d in shape), dtype


@op("Reshape", shape=_reshape_rule)
def _reshape(x, *, shape):
    return np.reshape(x, shape)


@_reshape.def_grad
def _(g, out, x, *, shape):
    return reshape_like(g, x)


@op("ReshapeLike", shape=lambda x, like: (like[0], x[1]))
def _reshape_like(x, like):
    return np.reshape(x, like.shape)


@_reshape_like.def_grad
def _(g, out, x, like):
    return reshape_like(g, x), None


def reshape_like(x, like):
    """Reshape `x` to the runtime shape of `like` (used by gradients; works with unknown dims)."""
    if x.shape.is_fully_defined() and like.shape.is_fully_defined():
        if x.shape == like.shape:
            return x
        return apply(_reshape, x, shape=tuple(like.shape.as_list()))
    return apply(_reshape_like, x, like)


@export("reshape")
def reshape(tensor: Any, shape: Any, name: str | None = None):
    """Reshape `tensor` to `shape` (one dim may be -1)."""
    return apply(_reshape, tensor, shape=_shape_arg(shape))


# --- transpose --------------------------------------------------------------------------------


@op("Transpose", shape=lambda x, *, perm: (
    None if x[0] is None else tuple(x[0][p] for p in perm), x[1]))
def _transpose(x, *, perm):
    return np.transpose(x, perm)


@_transpose.def_grad
def _(g, out, x, *, perm):
    return apply(_transpose, g, perm=tuple(np.argsort(perm).tolist()))


@export("transpose", "linalg.transpose")
def transpose(a: Any, perm: Any = None, conjugate: bool = False, name: str | None = None):
    """Permute dimensions; default reverses them."""
    if not hasattr(a, "shape"):
        a = convert_to_tensor(a)
    if perm is None:
        perm = tuple(reversed(range(a.shape.rank)))
    return apply(_transpose, a, perm=tuple(int(p) for p in _shape_arg(perm)))


# --- fills ------------------------------------------------------------------------------------


@op("Fill", shape=lambda *, shape, value, dtype: (shape, dtype))
def _fill(*, shape, value, dtype):
    return np.full(shape, value, dtype=dtype._np)


@op("OnesLike", shape=same_as_first)
def _ones_like(x):
    return np.ones_like(x)


@op("ZerosLike", shape=same_as_first)
def _zeros_like(x):
    return np.zeros_like(x)


@export("zeros")
def zeros(shape: Any, dtype: Any = _dtypes.float32, name: str | None = None):
    """A tensor of zeros."""
    return apply(_fill, shape=_shape_arg(shape), value=0, dtype=_dtypes.as_dtype(dtype))


@export("ones")
def ones(shape: Any, dtype: Any = _dtypes.float32, name: str | None = None):
    """A tensor of ones."""
    return apply(_fill, shape=_shape_arg(shape), value=1, dtype=_dtypes.as_dtype(dtype))


@export("fill")
def fill(dims: Any, value: Any, name: str | None = None):
    """A tensor of shape `dims` filled with scalar `value` (dtype inferred from value)."""
    v = convert_to_tensor(value)
    return apply(_fill, shape=_shape_arg(dims), value=v.numpy(), dtype=v.dtype)


@export("ones_like")
def ones_like(input: Any, dtype: Any = None, name: str | None = None):  # noqa: A002
    """Ones with the shape (and dtype) of `input`."""
    t = convert_to_tensor(input)
    out = apply(_ones_like, t)
    return out if dtype is None else _cast(out, dtype)


@export("zeros_like")
def zeros_like(input: Any, dtype: Any = None, name: str | None = None):  # noqa: A002
    """Zeros with the shape (and dtype) of `input`."""
    t = convert_to_tensor(input)
    out = apply(_zeros_like, t)
    return out if dtype is None else _cast(out, dtype)


def _cast(x, dtype):
    from tapeflow.ops.math_ops import cast

    return cast(x, dtype)


# --- stack / unstack --------------------------------------------------------------------------


def _stack_rule(*xs, axis):
    shapes = [s for s, _ in xs]
    base = next((s for s in shapes if s is not None), None)
    if base is None:
        return None, xs[0][1]
    ax = axis if axis >= 0 else axis + len(base) + 1
    return tuple(base[:ax]) + (len(xs),) + tuple(base[ax:]), xs[0][1]


@op("Pack", same_dtype=True, shape=_stack_rule)
def _stack(*xs, axis):
    return np.stack(xs, axis=axis)


@_stack.def_grad
def _(g, out, *xs, axis):
    return tuple(unstack(g, num=len(xs), axis=axis))


def _unstack_rule(x, *, num, axis):
    shape, dtype = x
    if shape is None:
        return [(None, dtype)] * num
    ax = axis % len(shape)
    return [(tuple(shape[:ax]) + tuple(shape[ax + 1:]), dtype)] * num


@op("Unpack", multi_output=True, shape=_unstack_rule)
def _unstack(x, *, num, axis):
    return tuple(np.take(x, i, axis=axis) for i in range(num))


@_unstack.def_grad
def _(gs, outs, x, *, num, axis):
    return apply(_stack, *gs, axis=axis)


@export("stack")
def stack(values: Any, axis: int = 0, name: str | None = "stack"):
    """Stack a list of rank-R tensors into one rank-(R+1) tensor."""
    values = list(values)
    if not values:
        raise ValueError("tf.stack needs at least one value")
    first = next((v for v in values if hasattr(v, "dtype")), None)
    hint = first.dtype if first is not None else None
    vals = [v if hasattr(v, "dtype") else convert_to_tensor(v, dtype_hint=hint) for v in values]
    return apply(_stack, *vals, axis=int(axis))


@export("unstack")
def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack"):
    """Split a tensor along `axis` into a list of tensors."""
    value = convert_to_tensor(value)
    if num is None:
        num = value.shape[axis]
        if num is None:
            raise ValueError(f"Cannot infer argument `num` from shape {value.shape}")
    return list(apply(_unstack, value, num=int(num), axis=int(axis)))


# --- gather -----------------------------------------------------------------------------------


def _gather_rule(params, indices, *, axis):
    ps, dtype = params
    ind = indices[0]
    if ps is None or ind is None:
        return None, dtype
    return tuple(ps[:axis]) + tuple(ind) + tuple(ps[axis + 1:]), dtype


@op("GatherV2", shape=_gather_rule)
def _gather(params, indices, *, axis):
    return np.take(params, indices, axis=axis)


@op("ScatterAddLike", shape=lambda g, indices, like, *, axis: like)
def _scatter_add_like(g, indices, like, *, axis):
    """Gradient of gather: add slices of `g` back into zeros shaped like `params`."""
    out = np.zeros(like.shape, dtype=g.dtype)
    moved = np.moveaxis(out, axis, 0)
    gm = np.moveaxis(g, list(range(axis, axis + indices.ndim)), list(range(indices.ndim)))
    np.add.at(moved, indices.reshape(-1), gm.reshape((-1,) + moved.shape[1:]))
    return out


@_gather.def_grad
def _(g, out, params, indices, *, axis):
    return apply(_scatter_add_like, g, indices, params, axis=axis), None


@_scatter_add_like.def_grad
def _(g, out, gin, indices, like, *, axis):
    return apply(_gather, g, indices, axis=axis), None, None


@export("gather")
def gather(params: Any, indices: Any, validate_indices: Any = None, axis: int | None = None,
           batch_dims: int = 0, name: str | None = None):
    """Take slices of `params` along `axis` at `indices`."""
    params = params if hasattr(params, "_as_tensor") else convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    if batch_dims:
        raise NotImplementedError("gather with batch_dims != 0")
    axis = 0 if axis is None else int(axis)
    if axis < 0:
        axis += params.shape.rank
    return apply(_gather, params, indices, axis=axis)


# --- identity / stop_gradient -----------------------------------------------------------------


@op("Identity", shape=same_as_first)
def _identity(x):
    return x


@_identity.def_grad
def _(g, out, x):
    return g


@op("StopGradient", shape=same_as_first)
def _stop_gradient(x):
    return x


@export("identity")
def identity(input: Any, name: str | None = None):  # noqa: A002
    """Return a tensor with the same value (reads a Variable's current value)."""
    return apply(_identity, input if hasattr(input, "dtype") else convert_to_tensor(input))


@export("stop_gradient")
def stop_gradient(input: Any, name: str | None = None):  # noqa: A002
    """Same value; gradients do not flow through it."""
    return apply(_stop_gradient, input if hasattr(input, "dtype") else convert_to_tensor(input))
