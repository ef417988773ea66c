"""Shape-changing and data-movement ops: reshape, transpose, stack, concat, tile, pad, fills ...

Indexing lives in indexing_ops.py, gather in gather_ops.py, range/linspace/eye/one_hot in
creation_ops.py, shape arguments (static or run-time) in shape_args.py.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tapeflow._api import export, export_value
from tapeflow.framework import constant as _constant
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import name_output
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import same_as_first
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.variable import Variable
from tapeflow.kernels import concat as _concat_kernel
from tapeflow.ops.shape_args import (  # noqa: F401  (imported from here by other ops)
    _dynamic_shape,
    _filled_rule,
    _is_symbolic,
    _known_rule,
    _shape_arg,
    known_dims,
    run_time_shape,
    shape_operands,
)

export_value("newaxis", None)


# --- reshape ----------------------------------------------------------------------------------


def _reshape_rule(x, *, shape):
    in_shape, dtype = x
    known = int(np.prod([d for d in shape if d != -1]))
    if in_shape is None or any(d is None for d in in_shape):
        return tuple(None if d == -1 else d for d in shape), dtype
    total = int(np.prod(in_shape))
    fits = total % known == 0 if -1 in shape and known else total == known
    if not fits:
        raise errors.InvalidArgumentError(
            None, "Reshape",
            f"Reshape: cannot reshape a tensor with {total} elements (shape {list(in_shape)}) "
            f"to shape {list(shape)}\n{errors.user_line()}")
    return tuple(total // known if d == -1 and known else d for d in shape), dtype


def _reshape_emit(node, args: list[str], bind) -> str:
    return f"{args[0]}.reshape({bind(tuple(node.attrs['shape']), 'shape')})"


@op("Reshape", shape=_reshape_rule, passthrough=True, emit=_reshape_emit,
    output="view")
def _reshape(x, *, shape):
    return np.reshape(x, shape)


@_reshape.def_grad
def _(g, out, x, *, shape):
    return reshape_like(g, x)


@op("ReshapeLike", shape=lambda x, like: (like[0], x[1]), shape_only=(1,))
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
    """Reshape `tensor` to `shape` (one dim may be -1; a run-time shape tensor works too)."""
    dyn = _dynamic_shape(shape)
    if dyn is not None:
        return apply(_reshape_dynamic, tensor, dyn, known=known_dims(dyn))
    return apply(_reshape, tensor, shape=_shape_arg(shape))


# --- transpose --------------------------------------------------------------------------------


def _transpose_emit(node, args: list[str], bind) -> str:
    return f"{args[0]}.transpose({bind(tuple(node.attrs['perm']), 'perm')})"


@op("Transpose", shape=lambda x, *, perm: (
    None if x[0] is None else tuple(x[0][p] for p in perm), x[1]),
    passthrough=lambda attrs: tuple(attrs["perm"]) == tuple(range(len(attrs["perm"]))),
    emit=_transpose_emit, output="view")
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


@op("Fill", shape=_filled_rule)
def _fill(*dims, shape, value, dtype):
    return np.full(run_time_shape(dims, shape), value, dtype=dtype._np)


@op("OnesLike", shape=same_as_first, shape_only=(0,))
def _ones_like(x):
    return np.ones_like(x)


@op("ZerosLike", shape=same_as_first, shape_only=(0,))
def _zeros_like(x):
    return np.zeros_like(x)


@export("zeros")
def zeros(shape: Any, dtype: Any = _dtypes.float32, name: str | None = None):
    """A tensor of zeros."""
    dims, static = shape_operands(shape, "tf.zeros")
    return apply(_fill, *dims, shape=static, value=0, dtype=_dtypes.as_dtype(dtype))


@export("ones")
def ones(shape: Any, dtype: Any = _dtypes.float32, name: str | None = None):
    """A tensor of ones."""
    dims, static = shape_operands(shape, "tf.ones")
    return apply(_fill, *dims, shape=static, value=1, dtype=_dtypes.as_dtype(dtype))


@export("fill")
def fill(dims: Any, value: Any, name: str | None = None):
    """A tensor of shape `dims` filled with scalar `value` (dtype inferred from value)."""
    v = convert_to_tensor(value)
    if _is_symbolic(v):
        if v.node.op.name != "Const":
            raise ValueError(f"tf.fill: the value must be known when tracing (a constant), got "
                             f"the output of {v.node.op.name}\n{errors.user_line()}")
        scalar = np.asarray(v.node.attrs["value"])
    else:
        scalar = v.numpy()
    inputs, static = shape_operands(dims, "tf.fill")
    return apply(_fill, *inputs, shape=static, value=scalar, dtype=v.dtype)


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


# --- identity / stop_gradient -----------------------------------------------------------------


@op("Identity", shape=same_as_first, output="input")
def _identity(x):
    return x


@_identity.def_grad
def _identity_grad(g, out, x):
    return g


_identity_grad.passes_slices = True  # an IndexedSlices gradient goes through, as in TF


@op("StopGradient", shape=same_as_first, output="input")
def _stop_gradient(x):
    return x


@export("identity")
def identity(input: Any, name: str | None = None):  # noqa: A002
    """Return a tensor with the same value (reads a Variable's current value); in a graph,
    its node takes `name` (``tf.identity(y, name="output")``, then ``"output:0"``)."""
    out = apply(_identity, input if hasattr(input, "dtype") else convert_to_tensor(input))
    return name_output(out, name)


@export("stop_gradient")
def stop_gradient(input: Any, name: str | None = None):  # noqa: A002
    """Same value; gradients do not flow through it."""
    return apply(_stop_gradient, input if hasattr(input, "dtype") else convert_to_tensor(input))


# --- helpers for the ops below ----------------------------------------------------------------


def _tensor(x: Any, dtype_hint: Any = None):
    """Tensors and variables pass through; Python/NumPy values become constants."""
    if isinstance(x, (Tensor, Variable)):
        return x
    return convert_to_tensor(x, dtype_hint=dtype_hint)


def _python_int(v: Any, what: str) -> int:
    """An int from a Python/NumPy number or an eager scalar tensor (symbolic ones cannot)."""
    if _is_symbolic(v):
        raise TypeError(f"{what} must be known when the graph is traced, got the symbolic tensor "
                        f"{v!r}\n{errors.user_line()}")
    if hasattr(v, "numpy"):
        v = v.numpy()
    return int(v)


def _axis(axis: Any, rank: int | None, op_name: str, extra: int = 0) -> int:
    """Normalize a single axis into [0, rank + extra)."""
    axis = _python_int(axis, f"{op_name}: axis")
    if rank is None:
        return axis
    n = rank + extra
    if not -n <= axis < n:
        raise errors.InvalidArgumentError(
            None, op_name, f"{op_name}: axis {axis} is out of range for a tensor of rank {rank}"
            f"\n{errors.user_line()}")
    return axis % n


@op("ReshapeDynamic", shape=_known_rule)
def _reshape_dynamic(x, shape, *, known):
    return np.reshape(x, shape.tolist())


@_reshape_dynamic.def_grad
def _(g, out, x, shape, *, known):
    return reshape_like(g, x), None


# --- concat / split ---------------------------------------------------------------------------


def _concat_rule(*xs, axis):
    shapes = [s for s, _ in xs]
    if any(s is None for s in shapes):
        return None, xs[0][1]
    out = list(shapes[0])
    sizes = [s[axis] for s in shapes]
    out[axis] = None if any(d is None for d in sizes) else sum(sizes)
    return tuple(out), xs[0][1]


@op("ConcatV2", same_dtype=True, shape=_concat_rule, worker=True)
def _concat(*xs, axis):
    return _concat_kernel.concat(xs, axis)


@op("SplitLike", multi_output=True, shape=lambda g, *xs, axis: [(s, g[1]) for s, _ in xs],
    inverse=_concat)
def _split_like(g, *xs, axis):
    """Cut `g` along `axis` into pieces as long as each x (the gradient of concat)."""
    bounds = np.cumsum([x.shape[axis] for x in xs])[:-1]
    return tuple(np.split(g, bounds, axis=axis))


@_concat.def_grad
def _(g, out, *xs, axis):
    return apply(_split_like, g, *xs, axis=axis)


@_split_like.def_grad
def _(gs, outs, g, *xs, axis):
    return (apply(_concat, *gs, axis=axis),) + (None,) * len(xs)


def _split_rule(x, *, sizes, axis):
    shape, dtype = x
    n = sizes if isinstance(sizes, int) else len(sizes)
    if shape is None:
        return [(None, dtype)] * n
    specs = []
    for i in range(n):
        s = list(shape)
        if isinstance(sizes, int):
            s[axis] = None if shape[axis] is None else shape[axis] // sizes
        else:
            s[axis] = sizes[i]
        specs.append((tuple(s), dtype))
    return specs


def _split_emit(node, args: list[str], bind) -> str | None:
    """Equal splits along a static axis as basic slices (views, no kernel call)."""
    shape, axis, sizes = node.inputs[0].shape, node.attrs["axis"], node.attrs["sizes"]
    if not isinstance(sizes, int) or shape.rank is None or shape[axis] is None or (
            shape[axis] % sizes):
        return None
    axis %= shape.rank
    step = shape[axis] // sizes
    lead = ":, " * axis
    return ", ".join(f"{args[0]}[{lead}{i * step}:{(i + 1) * step}]"
                     for i in range(sizes)) + ","


@op("SplitV", multi_output=True, shape=_split_rule, inverse=_concat, emit=_split_emit,
    output="view")
def _split(x, *, sizes, axis):
    if isinstance(sizes, int):
        if x.shape[axis] % sizes:
            raise ValueError(f"dimension {axis} of size {x.shape[axis]} is not evenly "
                             f"divisible by {sizes}")
        return tuple(np.split(x, sizes, axis=axis))
    if sum(sizes) != x.shape[axis]:
        raise ValueError(f"sizes {list(sizes)} do not add up to dimension {axis} of size "
                         f"{x.shape[axis]}")
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


@_split.def_grad
def _(gs, outs, x, *, sizes, axis):
    return apply(_concat, *gs, axis=axis)


@export("concat")
def concat(values: Any, axis: int, name: str = "concat"):
    """Join tensors along an existing `axis`."""
    values = list(values)
    if not values:
        raise ValueError("tf.concat needs at least one value")
    first = next((v for v in values if hasattr(v, "dtype")), None)
    vals = [_tensor(v, first.dtype if first is not None else None) for v in values]
    axis = _axis(axis, vals[0].shape.rank, "ConcatV2")
    if len(vals) == 1:
        return identity(vals[0])
    return apply(_concat, *vals, axis=axis)


@export("split")
def split(value: Any, num_or_size_splits: Any, axis: int = 0, num: int | None = None,
          name: str = "split"):
    """Split into `n` equal pieces, or pieces of the given sizes (one size may be -1)."""
    x = _tensor(value)
    axis = _axis(axis, x.shape.rank, "SplitV")
    if hasattr(num_or_size_splits, "numpy"):
        num_or_size_splits = num_or_size_splits.numpy()
    if np.ndim(num_or_size_splits) == 0:
        sizes: Any = int(num_or_size_splits)
    else:
        sizes = [int(s) for s in np.asarray(num_or_size_splits).tolist()]
        if sizes.count(-1) > 1:
            raise ValueError(f"tf.split: at most one size may be -1, got {sizes}")
        if -1 in sizes:
            dim = x.shape[axis]
            if dim is None:
                raise ValueError("tf.split: a -1 size needs the split dimension known, got "
                                 f"shape {x.shape}")
            sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
        sizes = tuple(sizes)
    return list(apply(_split, x, sizes=sizes, axis=axis))


# --- tile / pad -------------------------------------------------------------------------------


@op("Tile", shape=lambda x, *, multiples: (None if x[0] is None else tuple(
    None if d is None else d * m for d, m in zip(x[0], multiples)), x[1]))
def _tile(x, *, multiples):
    if len(multiples) != x.ndim:
        raise ValueError(f"multiples has {len(multiples)} entries for a rank-{x.ndim} input")
    return np.tile(x, multiples)


@op("TileGrad", shape=lambda g, x, *, multiples: (x[0], g[1]))
def _tile_grad(g, x, *, multiples):
    """Sum the tiled copies of `g` back onto x's shape."""
    interleaved = [v for m, d in zip(multiples, x.shape) for v in (m, d)]
    return g.reshape(interleaved).sum(axis=tuple(range(0, 2 * x.ndim, 2)))


@_tile.def_grad
def _(g, out, x, *, multiples):
    return apply(_tile_grad, g, x, multiples=multiples)


@_tile_grad.def_grad
def _(gg, out, g, x, *, multiples):
    return apply(_tile, gg, multiples=multiples), None


@export("tile")
def tile(input: Any, multiples: Any, name: str | None = None):  # noqa: A002
    """Repeat the whole tensor `multiples[i]` times along each dim i."""
    return apply(_tile, _tensor(input), multiples=tuple(int(m) for m in _shape_arg(multiples)))


@export("repeat")
def repeat(input: Any, repeats: Any, axis: int | None = None,  # noqa: A002
           name: str | None = None):
    """Repeat each slice along `axis` (of the flattened input when None), as ``np.repeat``.

    A composition with its gradient for free: an int count is expand_dims + tile + reshape
    (a sum over the copies backwards); per-slice counts are one gather of static indices.
    """
    x = _tensor(input)
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    rank = x.shape.rank
    axis = _axis(axis, rank, "Repeat")
    counts = np.asarray(repeats.numpy() if hasattr(repeats, "numpy") else repeats)
    if counts.ndim == 1:
        size = x.shape[axis]
        if size is not None and counts.shape[0] not in (1, size):
            raise errors.InvalidArgumentError(
                f"Repeat: {counts.shape[0]} repeat counts for dim {axis} of size {size} "
                f"(input shape {x.shape})\n{errors.user_line()}")
        if counts.shape[0] != 1 or size is None:
            indices = np.repeat(np.arange(counts.shape[0]), counts.astype(np.int64))
            from tapeflow.ops.gather_ops import gather

            return gather(x, indices.astype(np.int32), axis=axis)
        counts = counts[0]
    n = int(counts)
    if n < 0:
        raise errors.InvalidArgumentError(
            f"Repeat: repeats must be non-negative, got {n}\n{errors.user_line()}")
    tiled = tile(expand_dims(x, axis + 1), [1] * (axis + 1) + [n] + [1] * (rank - axis - 1))
    dims = x.shape.as_list()
    dims[axis] = None if dims[axis] is None else dims[axis] * n
    if dims.count(None) <= 1:
        return reshape(tiled, [-1 if d is None else d for d in dims])
    runtime = shape(x)
    return reshape(tiled, concat([runtime[:axis], [runtime[axis] * n], runtime[axis + 1:]], 0))


_NP_PAD_MODE = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}


@op("PadV2", shape=lambda x, *, paddings, mode, constant_values: (None if x[0] is None else tuple(
    None if d is None else d + lo + hi for d, (lo, hi) in zip(x[0], paddings)), x[1]))
def _pad(x, *, paddings, mode, constant_values):
    if len(paddings) != x.ndim:
        raise ValueError(f"paddings has {len(paddings)} rows for a rank-{x.ndim} input")
    if x.ndim == 0:  # np.pad rejects an empty pad_width
        return x.copy()
    limit = 0 if mode == "REFLECT" else 1
    if mode != "CONSTANT":
        for d, (lo, hi) in zip(x.shape, paddings):
            if max(lo, hi) > d - 1 + limit:
                raise ValueError(f"{mode} paddings {list(paddings)} must be at most "
                                 f"{'dim - 1' if limit == 0 else 'dim'} for shape "
                                 f"{list(x.shape)}")
        return np.pad(x, paddings, mode=_NP_PAD_MODE[mode])
    return np.pad(x, paddings, mode="constant", constant_values=constant_values)


@op("PadGrad", shape=lambda g, x, *, paddings, mode: (x[0], g[1]))
def _pad_grad(g, x, *, paddings, mode):
    """Adjoint of Pad: each padded position sends its gradient back to the source element."""
    out = g
    for ax, (lo, hi) in enumerate(paddings):
        n = x.shape[ax]
        moved = np.moveaxis(out, ax, 0)
        if mode == "CONSTANT":
            acc = moved[lo:lo + n]
        else:
            source = np.pad(np.arange(n), (lo, hi), mode=_NP_PAD_MODE[mode])
            acc = np.zeros((n,) + moved.shape[1:], dtype=g.dtype)
            np.add.at(acc, source, moved)
        out = np.moveaxis(acc, 0, ax)
    return np.ascontiguousarray(out)


@_pad.def_grad
def _(g, out, x, *, paddings, mode, constant_values):
    return apply(_pad_grad, g, x, paddings=paddings, mode=mode)


@_pad_grad.def_grad
def _(gg, out, g, x, *, paddings, mode):
    return apply(_pad, gg, paddings=paddings, mode=mode, constant_values=0), None


@export("pad")
def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", constant_values: Any = 0,
        name: str | None = None):
    """Pad each dim i with paddings[i] = [before, after] (CONSTANT, REFLECT or SYMMETRIC)."""
    x = _tensor(tensor)
    mode = mode.upper()
    if mode not in _NP_PAD_MODE:
        raise ValueError(f"tf.pad: mode must be CONSTANT, REFLECT or SYMMETRIC, got {mode!r}")
    if hasattr(paddings, "numpy"):
        paddings = paddings.numpy()
    pairs = tuple((int(lo), int(hi)) for lo, hi in np.asarray(paddings).reshape(-1, 2).tolist())
    cv = constant_values.numpy() if hasattr(constant_values, "numpy") else constant_values
    return apply(_pad, x, paddings=pairs, mode=mode, constant_values=cv)


# --- expand_dims / squeeze / broadcast_to -----------------------------------------------------


@op("ExpandDims", shape=lambda x, *, axis: (
    None if x[0] is None else tuple(x[0][:axis]) + (1,) + tuple(x[0][axis:]), x[1]),
    output="view")
def _expand_dims(x, *, axis):
    return np.expand_dims(x, axis)


def _squeeze_rule(x, *, axis):
    shape, dtype = x
    if shape is None or (axis is None and None in shape):
        return None, dtype  # which unknown dims are 1 is known only at run time: unknown rank
    if axis is None:
        return tuple(d for d in shape if d != 1), dtype
    return tuple(d for i, d in enumerate(shape) if i not in axis), dtype


@op("Squeeze", shape=_squeeze_rule, output="view")
def _squeeze(x, *, axis):
    return np.squeeze(x, axis)


def _reshape_back(g, out, x, **attrs):
    return reshape_like(g, x)


_expand_dims.def_grad(_reshape_back)
_squeeze.def_grad(_reshape_back)


@export("expand_dims")
def expand_dims(input: Any, axis: int, name: str | None = None):  # noqa: A002
    """Insert a dim of size 1 at `axis` (negative counts from the end of the result)."""
    x = _tensor(input)
    return apply(_expand_dims, x, axis=_axis(axis, x.shape.rank, "ExpandDims", extra=1))


@export("squeeze")
def squeeze(input: Any, axis: Any = None, name: str | None = None):  # noqa: A002
    """Remove dims of size 1 (all of them, or those listed in `axis`)."""
    x = _tensor(input)
    if axis is not None:
        axes = [axis] if np.ndim(axis) == 0 else list(axis)
        axis = tuple(sorted(_axis(a, x.shape.rank, "Squeeze") for a in axes))
        for a in axis:
            d = x.shape[a] if x.shape.rank is not None else None
            if d is not None and d != 1:
                raise errors.InvalidArgumentError(
                    None, "Squeeze", f"Squeeze: can not squeeze dim[{a}], expected a dimension "
                    f"of 1, got {d} (input shape {x.shape})\n{errors.user_line()}")
    return apply(_squeeze, x, axis=axis)


@op("BroadcastTo", shape=lambda x, *, shape: (shape, x[1]))
def _broadcast_to(x, *, shape):
    return np.broadcast_to(x, shape)


@op("BroadcastToDynamic", shape=_known_rule)
def _broadcast_to_dynamic(x, shape, *, known):
    return np.broadcast_to(x, tuple(shape.tolist()))


@_broadcast_to.def_grad
def _(g, out, x, *, shape):
    from tapeflow.ops.math_ops import unbroadcast

    return unbroadcast(g, x)


@_broadcast_to_dynamic.def_grad
def _(g, out, x, shape, *, known):
    from tapeflow.ops.math_ops import unbroadcast

    return unbroadcast(g, x), None


@export("broadcast_to")
def broadcast_to(input: Any, shape: Any, name: str | None = None):  # noqa: A002
    """Broadcast `input` to `shape` with NumPy's rules (the gradient sums back)."""
    x = _tensor(input)
    dyn = _dynamic_shape(shape)
    if dyn is not None:
        return apply(_broadcast_to_dynamic, x, dyn, known=known_dims(dyn))
    return apply(_broadcast_to, x, shape=_shape_arg(shape))


# --- shape / size / rank ----------------------------------------------------------------------


@op("Shape", shape=lambda x, *, out_type: (None if x[0] is None else (len(x[0]),), out_type),
    shape_only=(0,))
def _shape(x, *, out_type):
    return np.array(x.shape, dtype=out_type._np)


@op("Size", shape=lambda x, *, out_type: ((), out_type), shape_only=(0,))
def _size(x, *, out_type):
    return np.array(x.size, dtype=out_type._np)


@op("Rank", shape=lambda x: ((), _dtypes.int32), shape_only=(0,))
def _rank(x):
    return np.array(x.ndim, dtype=np.int32)


@export("shape")
def shape(input: Any, out_type: Any = _dtypes.int32, name: str | None = None):  # noqa: A002
    """The shape as an int32 tensor, known at run time even where the static shape has None."""
    return apply(_shape, _tensor(input), out_type=_dtypes.as_dtype(out_type))


@export("size")
def size(input: Any, out_type: Any = _dtypes.int32, name: str | None = None):  # noqa: A002
    """The number of elements as a scalar tensor."""
    return apply(_size, _tensor(input), out_type=_dtypes.as_dtype(out_type))


@export("rank")
def rank(input: Any, name: str | None = None):  # noqa: A002
    """The number of dimensions as a scalar int32 tensor."""
    return apply(_rank, _tensor(input))


# --- reverse / sort / top_k -------------------------------------------------------------------


@op("ReverseV2", shape=lambda x, *, axis: x)
def _reverse(x, *, axis):
    return np.flip(x, axis)


@_reverse.def_grad
def _(g, out, x, *, axis):
    return apply(_reverse, g, axis=axis)


@export("reverse")
def reverse(tensor: Any, axis: Any, name: str | None = None):
    """Reverse the order of elements along each dim in `axis`."""
    x = _tensor(tensor)
    axes = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).tolist())
    return apply(_reverse, x, axis=tuple(_axis(a, x.shape.rank, "ReverseV2") for a in axes))


@op("ArgSort", shape=lambda x, *, axis, descending: (x[0], _dtypes.int32))
def _argsort(x, *, axis, descending):
    if descending:
        # stable descending order: ties keep their original order, as TF
        key = ~x if x.dtype.kind in "ub" else -x
        return np.argsort(key, axis=axis, kind="stable").astype(np.int32)
    return np.argsort(x, axis=axis, kind="stable").astype(np.int32)


@op("TakeAlongAxis", shape=lambda x, indices, *, axis: (indices[0], x[1]))
def _take_along_axis(x, indices, *, axis):
    return np.take_along_axis(x, indices, axis=axis)


@op("PutAlongAxisAdd", shape=lambda g, indices, like, *, axis: (like[0], g[1]))
def _put_along_axis_add(g, indices, like, *, axis):
    out = np.zeros(like.shape, dtype=g.dtype)
    where = list(np.indices(indices.shape, sparse=True))
    where[axis] = indices
    np.add.at(out, tuple(where), g)
    return out


@_take_along_axis.def_grad
def _(g, out, x, indices, *, axis):
    return apply(_put_along_axis_add, g, indices, x, axis=axis), None


@_put_along_axis_add.def_grad
def _(gg, out, g, indices, like, *, axis):
    return apply(_take_along_axis, gg, indices, axis=axis), None, None


def _direction(direction: str) -> bool:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    return direction == "DESCENDING"


@export("argsort")
def argsort(values: Any, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None):
    """Indices (int32) that sort `values` along `axis` (always stable)."""
    x = _tensor(values)
    return apply(_argsort, x, axis=_axis(axis, x.shape.rank, "ArgSort"),
                 descending=_direction(direction))


@export("sort")
def sort(values: Any, axis: int = -1, direction: str = "ASCENDING", name: str | None = None):
    """Sorted copy along `axis`; gradients flow back to the original positions."""
    x = _tensor(values)
    axis = _axis(axis, x.shape.rank, "Sort")
    order = apply(_argsort, x, axis=axis, descending=_direction(direction))
    return apply(_take_along_axis, x, order, axis=axis)


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


@export("math.top_k", "nn.top_k")
def top_k(input: Any, k: int = 1, sorted: bool = True, name: str | None = None):  # noqa: A002
    """The k largest entries of the last dim and their int32 indices (ties: lower index first)."""
    x = _tensor(input)
    k = _python_int(k, "top_k: k")
    n = x.shape[-1] if x.shape.rank else None
    if n is not None and k > n:
        raise errors.InvalidArgumentError(
            None, "TopKV2", f"TopKV2: input must have at least k={k} columns, got shape "
            f"{x.shape}\n{errors.user_line()}")
    from tapeflow.ops.indexing_ops import slice_by_index  # indexing builds on this module

    order = apply(_argsort, x, axis=x.shape.rank - 1, descending=True)
    indices = slice_by_index(order, (Ellipsis, slice(None, k)))
    return TopKV2(apply(_take_along_axis, x, indices, axis=x.shape.rank - 1), indices)


def _iterate_eager(self: EagerTensor):
    """Iterating over an eager tensor yields its rows (unstack along axis 0)."""
    if self._value.ndim == 0:
        raise TypeError("Cannot iterate over a scalar tensor.")
    return iter(unstack(self, num=self._value.shape[0]))


# methods and hooks the framework layer needs from the op library, installed from here
EagerTensor.__iter__ = _iterate_eager
_constant.stack = stack
