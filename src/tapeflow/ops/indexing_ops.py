"""Indexing: ``Tensor.__getitem__``, ``tf.strided_slice``, ``tf.slice``, ``tf.boolean_mask``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, eager_output, kernel_error, op
from tapeflow.framework.tensor import EagerTensor
from tapeflow.ops.array_ops import _axis, _is_symbolic, _python_int, _shape_arg, _tensor
from tapeflow.ops.dynamic_slice_ops import dynamic_slice
from tapeflow.ops.gather_ops import gather

# --- boolean_mask -----------------------------------------------------------------------------


def _mask_index(axis: int, mask) -> tuple:
    return (slice(None),) * axis + (mask,)


@op("BooleanMask", shape=lambda x, mask, *, axis: (
    None if x[0] is None or mask[0] is None else tuple(x[0][:axis]) + (None,)
    + tuple(x[0][axis + len(mask[0]):]), x[1]))
def _boolean_mask(x, mask, *, axis):
    if mask.dtype.kind != "b":
        raise TypeError(f"mask must be bool, got {mask.dtype}")
    return x[_mask_index(axis, mask)]


@op("BooleanMaskGrad", shape=lambda g, mask, like, *, axis: (like[0], g[1]))
def _boolean_mask_grad(g, mask, like, *, axis):
    out = np.zeros(like.shape, dtype=g.dtype)
    out[_mask_index(axis, mask)] = g
    return out


@_boolean_mask.def_grad
def _(g, out, x, mask, *, axis):
    return apply(_boolean_mask_grad, g, mask, x, axis=axis), None


@_boolean_mask_grad.def_grad
def _(gg, out, g, mask, like, *, axis):
    return apply(_boolean_mask, gg, mask, axis=axis), None, None


@export("boolean_mask")
def boolean_mask(tensor: Any, mask: Any, axis: int | None = None, name: str = "boolean_mask"):
    """The entries of `tensor` where the bool `mask` (covering dims axis..) is True, flattened."""
    x = _tensor(tensor)
    m = _tensor(mask)
    axis = 0 if axis is None else _axis(axis, x.shape.rank, "BooleanMask")
    return apply(_boolean_mask, x, m, axis=axis)


# --- strided slicing: tf.strided_slice, tf.slice and Tensor.__getitem__ ----------------------
#
# A slice spec is a tuple of items: ("i", n) index, ("s", start, stop, step) slice, ("n",) new
# axis, ("e",) ellipsis. It is hashable, so graph passes can compare and fold slicing nodes.

_FULL = ("s", None, None, None)


_KEYS: dict = {}  # spec -> NumPy index, for the specs seen most (x[1:5] in a loop)


def _np_key(spec: tuple) -> tuple:
    key = _KEYS.get(spec)
    if key is None:
        if len(_KEYS) > 4096:
            _KEYS.clear()
        key = _KEYS[spec] = _build_key(spec)
    return key


def _build_key(spec: tuple) -> tuple:
    key = []
    for item in spec:
        kind = item[0]
        if kind == "i":
            key.append(item[1])
        elif kind == "s":
            key.append(slice(item[1], item[2], item[3]))
        elif kind == "n":
            key.append(None)
        else:
            key.append(Ellipsis)
    return tuple(key)


def _expand_ellipsis(spec: tuple, rank: int) -> tuple:
    consumed = sum(1 for item in spec if item[0] in "is")
    out: list = []
    seen = False
    for item in spec:
        if item[0] == "e":
            if seen:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen = True
            out.extend([_FULL] * (rank - consumed))
        else:
            out.append(item)
    return tuple(out)


def _strided_slice_rule(x, *, spec):
    shape, dtype = x
    if shape is None:
        return None, dtype
    spec = _expand_ellipsis(spec, len(shape))
    out: list = []
    dim = 0
    for item in spec:
        if item[0] == "n":
            out.append(1)
            continue
        d = shape[dim]
        dim += 1
        if item[0] == "s":
            out.append(None if d is None else len(range(
                *slice(item[1], item[2], item[3]).indices(d))))
    out.extend(shape[dim:])
    return tuple(out), dtype


@op("StridedSlice", shape=_strided_slice_rule, output="view")  # basic indexing: a view
def _strided_slice(x, *, spec):
    key = _KEYS.get(spec)  # (_np_key inlined: a frame is a fifth of the kernel's time)
    out = x[_np_key(spec) if key is None else key]
    if not isinstance(out, np.ndarray) and x.dtype == object:  # (the cheap test first)
        # one string element: kept as an object scalar (a fixed-width bytes array would drop
        # its trailing NUL bytes)
        out = np.array(out, dtype=object)
    return out


@op("StridedSliceGrad", shape=lambda g, like, *, spec: (like[0], g[1]))
def _strided_slice_grad(g, like, *, spec):
    out = np.zeros(like.shape, dtype=g.dtype)
    out[_np_key(spec)] = g
    return out


@_strided_slice.def_grad
def _(g, out, x, *, spec):
    return apply(_strided_slice_grad, g, x, spec=spec)


@_strided_slice_grad.def_grad
def _(gg, out, g, like, *, spec):
    return apply(_strided_slice, gg, spec=spec), None


def _bound(v: Any) -> int | None:
    return None if v is None else _python_int(v, "slice bound")


def _is_index_array(item: Any) -> bool:
    if isinstance(item, (list, np.ndarray)):
        return True
    return hasattr(item, "dtype") and hasattr(item, "shape") and not isinstance(
        item, np.generic) and (item.shape.rank != 0 or _is_symbolic(item))


def _slice(tensor: Any, spec: tuple):
    """``apply(_strided_slice, tensor, spec=spec)``; an eager tensor in a plain eager thread
    (no tape, no tf.device) runs the kernel straight away, as apply would."""
    if type(tensor) is EagerTensor and _state.plain:
        x = tensor._value
        try:
            out = _strided_slice.kernel(x, spec=spec)
        except Exception as e:  # x[3] out of range: as apply words it
            raise kernel_error(_strided_slice, [x], {"spec": spec}, e) from e
        return eager_output(_strided_slice, out)
    return apply(_strided_slice, _tensor(tensor), spec=spec)


def slice_by_index(tensor: Any, key: Any):
    """``tensor[key]``: ints, slices (any step), ``...``, ``None``, int tensors/lists (gather)
    and a bool mask. Differentiable; negative indices count from the end."""
    if type(key) is slice:  # fast paths: x[a:b:c] and x[i] with Python ints (no ellipsis)
        start, stop, step = key.start, key.stop, key.step
        if (start is None or type(start) is int) and (stop is None or type(stop) is int) and (
                step is None or type(step) is int and step != 0):
            return _slice(tensor, (("s", start, stop, step),))
    elif type(key) is int:
        return _slice(tensor, (("i", key),))
    x = _tensor(tensor)
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) == 1 and _is_index_array(key[0]):
        idx = _tensor(key[0])
        if idx.dtype.is_bool:
            return boolean_mask(x, idx)
    spec: list = []
    advanced = []
    for item in key:
        if item is None:
            spec.append(("n",))
        elif item is Ellipsis:
            spec.append(("e",))
        elif isinstance(item, slice):
            if item.step is not None and _bound(item.step) == 0:
                raise ValueError("slice step cannot be zero")
            spec.append(("s", _bound(item.start), _bound(item.stop), _bound(item.step)))
        elif _is_index_array(item):
            advanced.append((len(spec), _tensor(item)))
            spec.append(_FULL)
        elif isinstance(item, (bool, np.bool_)) or not (
                isinstance(item, (int, np.integer)) or hasattr(item, "__index__")):
            raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`), tf.newaxis "
                            f"(`None`) and integer or boolean tensors are valid indices, got "
                            f"{item!r}\n{errors.user_line()}")
        else:
            spec.append(("i", _python_int(item, "index")))
    if len(advanced) > 1:
        raise TypeError(f"tapeflow supports one tensor index per subscript, got {len(advanced)} "
                        f"(use tf.gather_nd)\n{errors.user_line()}")
    rank = x.ndim
    spec_t = tuple(spec)
    if rank is not None:
        spec_t = _expand_ellipsis(spec_t, rank)
        n_indexed = sum(1 for s in spec_t if s[0] in "is")
        if n_indexed > rank:
            raise errors.InvalidArgumentError(
                None, "StridedSlice", f"StridedSlice: too many indices ({n_indexed}) for a "
                f"tensor of rank {rank} (shape {x.shape})\n{errors.user_line()}")
    out = x
    if any(s != _FULL for s in spec_t) or not advanced:
        out = apply(_strided_slice, x, spec=spec_t)
    if advanced:
        pos, idx = advanced[0]
        if "e" in (s[0] for s in spec_t):
            raise TypeError("a tensor index together with `...` needs the input rank known")
        axis = sum(1 for s in spec_t[:pos] if s[0] in "sn")
        out = gather(out, idx, axis=axis)
    return out


@export("strided_slice")
def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None, name: str | None = None):
    """TF's strided slice with its bit masks (``x[b0:e0:s0, ...]`` spelled out)."""
    begin, end = _shape_arg(begin), _shape_arg(end)
    strides = (1,) * len(begin) if strides is None else _shape_arg(strides)
    spec = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if ellipsis_mask & bit:
            spec.append(("e",))
        elif new_axis_mask & bit:
            spec.append(("n",))
        elif shrink_axis_mask & bit:
            spec.append(("i", b))
        else:
            spec.append(("s", None if begin_mask & bit else b, None if end_mask & bit else e, s))
    return apply(_strided_slice, _tensor(input_), spec=tuple(spec))


@export("slice")
def slice_(input_: Any, begin: Any, size: Any, name: str | None = None):
    """The block starting at `begin` with extent `size` (-1: to the end of that dim)."""
    if _is_symbolic(begin) or (isinstance(begin, (list, tuple))
                               and any(_is_symbolic(b) for b in begin)):
        return dynamic_slice(_tensor(input_), convert_to_tensor(begin), _shape_arg(size))
    begin, size = _shape_arg(begin), _shape_arg(size)
    spec = tuple(("s", b, None if n == -1 else b + n, 1) for b, n in zip(begin, size))
    return apply(_strided_slice, _tensor(input_), spec=spec)
