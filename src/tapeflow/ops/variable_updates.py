"""Indexed writes to Variables: ``v[0, 1].assign(x)``, ``v.scatter_update(IndexedSlices)``,
``v.scatter_nd_add(indices, updates)`` and the ``tf.compat.v1.scatter_*`` functions.

Each write computes the variable's new value with a pure, differentiable op (a strided-slice
update or a ``tensor_scatter_nd_*``) and assigns it, so it works eagerly and in ``tf.function``.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, gather_ops, indexing_ops, math_ops, scatter_ops
from tapeflow.ops.indexed_slices import IndexedSlices
from tapeflow.ops.indexing_ops import _np_key, _strided_slice

# --- sliced assignment ------------------------------------------------------------------------


@op("TensorStridedSliceUpdate", shape=lambda x, value, *, spec: x)
def _slice_update(x, value, *, spec):
    out = x.copy()
    out[_np_key(spec)] = value
    return out


@_slice_update.def_grad
def _(g, out, x, value, *, spec):
    g_value = apply(_strided_slice, g, spec=spec)
    return (apply(_slice_update, g, array_ops.zeros_like(g_value), spec=spec),
            math_ops.unbroadcast(g_value, value))


# id(slice tensor) -> (weak ref to it, variable, spec): what `v[key].assign` writes to
_SLICES: dict[int, tuple] = {}


def _basic_spec(key: Any, rank: int) -> tuple | None:
    """The strided-slice spec of a key of ints, slices, ``...`` and ``None``; else None."""
    items = key if isinstance(key, tuple) else (key,)
    spec: list = []
    for item in items:
        if item is None:
            spec.append(("n",))
        elif item is Ellipsis:
            spec.append(("e",))
        elif isinstance(item, slice):
            spec.append(("s", indexing_ops._bound(item.start), indexing_ops._bound(item.stop),
                         indexing_ops._bound(item.step)))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            spec.append(("i", int(item)))
        elif getattr(item, "shape", None) is not None and item.shape.rank == 0 and \
                getattr(item, "_value", None) is not None:
            spec.append(("i", int(item._value)))
        else:
            return None
    return indexing_ops._expand_ellipsis(tuple(spec), rank)


def variable_getitem(var: Any, key: Any):
    """``v[key]``: the slice's value, which remembers where it came from for ``.assign``."""
    out = indexing_ops.slice_by_index(var, key)
    spec = _basic_spec(key, var.shape.rank) if var.shape.rank is not None else None
    if spec is not None:
        ident = id(out)
        ref = weakref.ref(out, lambda _, k=ident: _SLICES.pop(k, None))
        _SLICES[ident] = (ref, var, spec)
    return out


def sliced_method(tensor: Any, name: str):
    """``assign``/``assign_add``/``assign_sub`` of a tensor made by slicing a Variable."""
    entry = _SLICES.get(id(tensor))
    if entry is None or entry[0]() is not tensor or name not in _MODES:
        raise AttributeError(f"{type(tensor).__name__!r} object has no attribute {name!r}")
    return functools.partial(_assign_slice, entry[1], entry[2], _MODES[name])


def _assign_slice(var: Any, spec: tuple, mode: str, value: Any, use_locking: bool = False,
                  name: str | None = None, read_value: bool = True):
    current = var.read_value()
    value = array_ops._tensor(value, var.dtype)
    if value.dtype is not var.dtype:
        raise TypeError(f"sliced assign: the value's dtype {value.dtype.name} does not match "
                        f"variable {var.name}'s dtype {var.dtype.name}\n{errors.user_line()}")
    if mode != "set":
        old = apply(_strided_slice, current, spec=spec)
        value = math_ops.add(old, value) if mode == "add" else math_ops.subtract(old, value)
    return var.assign(apply(_slice_update, current, value, spec=spec), read_value=read_value)


_MODES = {"assign": "set", "assign_add": "add", "assign_sub": "sub"}

# --- scatter updates ----------------------------------------------------------------------------

_ND = {"update": scatter_ops.tensor_scatter_nd_update, "add": scatter_ops.tensor_scatter_nd_add,
       "sub": scatter_ops.tensor_scatter_nd_sub, "max": scatter_ops.tensor_scatter_nd_max,
       "min": scatter_ops.tensor_scatter_nd_min}


def _scatter_nd(var: Any, kind: str, indices: Any, updates: Any, read_value: bool = True):
    new = _ND[kind](var.read_value(), array_ops._tensor(indices),
                    array_ops._tensor(updates, var.dtype))
    return var.assign(new, read_value=read_value)


def _scatter_rows(var: Any, kind: str, sparse_delta: Any, read_value: bool = True):
    """Row updates from an IndexedSlices: rows `indices` of the variable combined with values."""
    if not isinstance(sparse_delta, IndexedSlices):
        raise TypeError(f"Variable.scatter_{kind}: sparse_delta must be a tf.IndexedSlices, got "
                        f"{type(sparse_delta).__name__}\n{errors.user_line()}")
    idx = array_ops.expand_dims(sparse_delta.indices, -1)
    values = sparse_delta.values
    if kind in ("mul", "div"):
        current = var.read_value()
        rows = gather_ops.gather(current, sparse_delta.indices)
        combined = math_ops.multiply(rows, values) if kind == "mul" else \
            math_ops.divide(rows, values)
        return var.assign(scatter_ops.tensor_scatter_nd_update(current, idx, combined),
                          read_value=read_value)
    return _scatter_nd(var, kind, idx, values, read_value)


def install(variable_cls: type, tensor_cls: type) -> None:
    """Add the indexed-write methods to Variable and the sliced ``.assign`` lookup to Tensor."""
    variable_cls.__getitem__ = variable_getitem
    tensor_cls.__getattr__ = sliced_method
    for kind in ("update", "add", "sub", "max", "min", "mul", "div"):
        def rows(self, sparse_delta, use_locking=False, name=None, _kind=kind):
            return _scatter_rows(self, _kind, sparse_delta)

        rows.__name__ = rows.__qualname__ = f"scatter_{kind}"
        rows.__doc__ = f"Rows of an IndexedSlices combined into the variable ({kind})."
        setattr(variable_cls, f"scatter_{kind}", rows)
    for kind in ("update", "add", "sub", "max", "min"):
        def nd(self, indices, updates, name=None, _kind=kind):
            return _scatter_nd(self, _kind, indices, updates)

        nd.__name__ = nd.__qualname__ = f"scatter_nd_{kind}"
        nd.__doc__ = f"``tensor_scatter_nd_{kind}`` of the variable, assigned back."
        setattr(variable_cls, f"scatter_nd_{kind}", nd)

    def sparse_read(self, indices, name=None):
        return gather_ops.gather(self, indices)

    variable_cls.sparse_read = sparse_read
    variable_cls.batch_scatter_update = lambda self, sparse_delta, use_locking=False, \
        name=None: _scatter_rows(self, "update", sparse_delta)


# --- tf.compat.v1 functions ---------------------------------------------------------------------


def _v1(kind: str, nd: bool):
    def fn(ref, indices, updates, use_locking=None, name=None):
        if nd:
            return _scatter_nd(ref, kind, indices, updates)
        return _scatter_rows(ref, kind, IndexedSlices(updates, indices))

    fn.__name__ = fn.__qualname__ = f"scatter_{'nd_' if nd else ''}{kind}"
    fn.__doc__ = f"``tf.compat.v1.{fn.__name__}``: writes into variable `ref`, returns it."
    return fn


scatter_update = _v1("update", False)
scatter_add = _v1("add", False)
scatter_sub = _v1("sub", False)
scatter_max = _v1("max", False)
scatter_min = _v1("min", False)
scatter_mul = _v1("mul", False)
scatter_div = _v1("div", False)
scatter_nd_update = _v1("update", True)
scatter_nd_add = _v1("add", True)
scatter_nd_sub = _v1("sub", True)
