"""Element structures: nesting (tuples, namedtuples, dicts), conversion and TensorSpecs.

Inside the pipeline an element is a nested structure whose leaves are NumPy arrays (cheap to
slice, stack and share between threads); users only ever see eager tensors, made at the edge
with `to_user` (a no-copy wrap).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.shapes import TensorShape
from tapeflow.framework.tensor import EagerTensor, Tensor, wrap
from tapeflow.framework.tensor_spec import TensorSpec


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x: Any) -> bool:
    """True for the containers tf.data recurses into: tuples, namedtuples and dicts."""
    return isinstance(x, (tuple, dict))


def flatten(struct: Any) -> list:
    """Leaves in TF's order: tuple order, dict values by sorted key."""
    if isinstance(struct, dict):
        out = []
        for k in sorted(struct):
            out.extend(flatten(struct[k]))
        return out
    if isinstance(struct, tuple):
        out = []
        for v in struct:
            out.extend(flatten(v))
        return out
    return [struct]


def pack_like(struct: Any, flat: list) -> Any:
    """Rebuild `struct`'s nesting around the leaves in `flat` (inverse of `flatten`)."""
    it = iter(flat)
    result = _pack(struct, it)
    return result


def _pack(struct: Any, it) -> Any:
    if isinstance(struct, dict):
        packed = {k: _pack(struct[k], it) for k in sorted(struct)}
        return type(struct)((k, packed[k]) for k in struct) if type(struct) is not dict \
            else {k: packed[k] for k in struct}
    if _is_namedtuple(struct):
        return type(struct)(*[_pack(v, it) for v in struct])
    if isinstance(struct, tuple):
        return tuple(_pack(v, it) for v in struct)
    return next(it)


def map_structure(fn: Callable, struct: Any, *more: Any) -> Any:
    """Apply `fn` to the leaves of one or more structures of the same nesting."""
    if isinstance(struct, dict):
        return {k: map_structure(fn, struct[k], *(m[k] for m in more)) for k in struct}
    if _is_namedtuple(struct):
        return type(struct)(*[map_structure(fn, *vs) for vs in zip(struct, *more)])
    if isinstance(struct, tuple):
        return tuple(map_structure(fn, *vs) for vs in zip(struct, *more))
    return fn(struct, *more)


def assert_same_structure(a: Any, b: Any, what: str) -> None:
    """Raise a TypeError naming `what` when two element structures differ."""
    if _shape_of_nest(a) != _shape_of_nest(b):
        raise TypeError(f"{what}: element structures differ: {_describe(a)} vs {_describe(b)}")


def _shape_of_nest(s: Any) -> Any:
    if isinstance(s, dict):
        return ("dict", tuple((k, _shape_of_nest(s[k])) for k in sorted(s)))
    if isinstance(s, tuple):
        return ("tuple", tuple(_shape_of_nest(v) for v in s))
    return "leaf"


def _describe(s: Any) -> str:
    return str(map_structure(lambda _: "*", s))


def to_array(value: Any, dtype: Any = None) -> np.ndarray:
    """One leaf to a NumPy array by TF rules (Python float -> float32, str -> bytes)."""
    if isinstance(value, EagerTensor):
        arr = value._value
        if dtype is not None and arr.dtype != _dtypes.as_dtype(dtype)._np:
            arr = arr.astype(_dtypes.as_dtype(dtype)._np)
        return arr
    if getattr(value, "_is_composite", False):   # SparseTensor travels as one unit
        return value
    if isinstance(value, Tensor):
        raise TypeError(f"tf.data needs concrete values, got the symbolic tensor {value!r}")
    if isinstance(value, np.ndarray) and value.dtype.kind not in "USO" and dtype is None:
        return value
    return convert_to_tensor(value, dtype)._value


def normalize(value: Any, dtype_struct: Any = None, lists_are_tuples: bool = False) -> Any:
    """A user-supplied element (tensors, arrays, Python values) to the internal form.

    Lists are tensors (as in TF), except a list returned at the top level by a map function
    when `lists_are_tuples` is set.
    """
    if lists_are_tuples and isinstance(value, list):  # TF: a returned list is a tuple
        value = tuple(value)
    if isinstance(value, dict):
        return {k: normalize(v, None if dtype_struct is None else dtype_struct[k])
                for k, v in value.items()}
    if isinstance(value, tuple):
        dts = dtype_struct if isinstance(dtype_struct, tuple) else (None,) * len(value)
        items = [normalize(v, d) for v, d in zip(value, dts)]
        return type(value)(*items) if _is_namedtuple(value) else tuple(items)
    return to_array(value, dtype_struct)


def to_user(element: Any) -> Any:
    """Internal element -> eager tensors (no copy)."""
    if isinstance(element, np.ndarray):
        return wrap(element)
    return map_structure(_wrap_leaf, element)


def _wrap_leaf(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return wrap(a)
    if hasattr(a, "_iterate") or getattr(a, "_is_composite", False):
        return a  # nested datasets (window), sparse tensors
    return wrap(np.asarray(a))


def to_numpy(element: Any) -> Any:
    """Internal element -> what `as_numpy_iterator` yields (scalars as NumPy scalars, as TF)."""
    return map_structure(lambda a: a[()] if getattr(a, "ndim", 1) == 0 else a, element)


def spec_of(element: Any) -> Any:
    """The TensorSpec structure describing one concrete element."""
    return map_structure(lambda a: a._type_spec if hasattr(a, "_type_spec") else
                         TensorSpec(a.shape, _dtypes.as_dtype(a.dtype)), element)


def relax_specs(a: Any, b: Any) -> Any:
    """A spec structure compatible with both `a` and `b` (differing dims become None)."""
    def one(x: TensorSpec, y: TensorSpec) -> TensorSpec:
        if x.dtype is not y.dtype:
            raise TypeError(f"Incompatible dtypes {x.dtype.name} and {y.dtype.name}")
        return TensorSpec(x.shape.most_specific_common_supertype([y.shape]), x.dtype)
    return map_structure(one, a, b)


def batched_spec(spec: Any, batch: int | None) -> Any:
    """Add a leading dimension (None when unknown) to every spec in the structure."""
    from tapeflow.data import composite

    def one(s: Any) -> Any:
        if composite.is_composite_spec(s):
            return composite.batched_spec(s, batch)
        return TensorSpec(TensorShape([batch]).concatenate(s.shape), s.dtype)

    return map_structure(one, spec)


def unbatched_spec(spec: Any) -> Any:
    """Drop the leading dimension of every spec in the structure."""
    def one(s: TensorSpec) -> TensorSpec:
        if s.shape.rank == 0:
            raise ValueError("Cannot unbatch an element with a scalar component")
        return TensorSpec(s.shape[1:], s.dtype)
    return map_structure(one, spec)


def nbytes(element: Any) -> int:
    """Memory held by an element's arrays (strings counted by their byte length)."""
    total = 0
    for a in flatten(element):
        if not isinstance(a, np.ndarray):
            continue
        if a.dtype == object:
            total += sum(len(s) for s in a.flat if isinstance(s, (bytes, str))) + a.nbytes
        else:
            total += a.nbytes
    return total


def call_with_element(fn: Callable, element: Any) -> Any:
    """Call a user function as tf.data does: a tuple element is spread over positional args."""
    user = to_user(element)
    if isinstance(user, tuple) and not _is_namedtuple(user):
        return fn(*user)
    return fn(user)
