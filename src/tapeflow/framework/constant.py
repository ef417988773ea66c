"""``tf.constant`` and ``tf.convert_to_tensor`` with TensorFlow's dtype rules.

Python floats become float32 and ints int32 (int64 when they do not fit); NumPy arrays keep their
dtype; a Python number is converted to the dtype of the tensor it meets (``x + 1``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.context import name_output
from tapeflow.framework.context import state as _state
from tapeflow.framework.tensor import EagerTensor, Tensor, wrap

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _infer_python_dtype(value: Any) -> _dtypes.DType:
    """TF's inference for (nested) Python scalars and lists."""
    kinds = set()

    def walk(v):
        if isinstance(v, (list, tuple)):
            for e in v:
                walk(e)
        elif isinstance(v, (bool, np.bool_)):
            kinds.add("b")
        elif isinstance(v, (int, np.integer)):
            kinds.add("i")
            if not _INT32_MIN <= int(v) <= _INT32_MAX:
                kinds.add("I")
        elif isinstance(v, (float, np.floating)):
            kinds.add("f")
        elif isinstance(v, complex):
            kinds.add("c")
        elif isinstance(v, (str, bytes)):
            kinds.add("s")
        elif isinstance(v, (EagerTensor, np.ndarray)):
            kinds.add(("t", _dtypes.from_numpy(np.asarray(v).dtype)))
        elif hasattr(v, "_as_tensor") and hasattr(v, "dtype"):  # a Variable
            kinds.add(("t", v.dtype))
        else:
            raise TypeError(f"Cannot convert {v!r} (type {type(v).__name__}) to a tensor")

    walk(value)
    for k in kinds:
        if isinstance(k, tuple):
            return k[1]
    if "s" in kinds:
        return _dtypes.string
    if "c" in kinds:
        return _dtypes.complex128
    if "f" in kinds:
        return _dtypes.float32
    if "I" in kinds:
        return _dtypes.int64
    if "i" in kinds:
        return _dtypes.int32
    if "b" in kinds:
        return _dtypes.bool
    return _dtypes.float32  # empty list, as TF


def _to_array(value: Any, dtype: _dtypes.DType, op_name: str | None) -> np.ndarray:
    if dtype is _dtypes.string:
        arr = np.asarray(value, dtype=object)
        return np.vectorize(lambda s: s.encode() if isinstance(s, str) else s,
                            otypes=[object])(arr) if arr.size else arr
    raw = np.asarray(value)
    if raw.dtype == object:
        raw = np.asarray(_unwrap_nested(value))
    if dtype.is_integer and raw.dtype.kind in "fc":
        if not np.all(np.isfinite(raw)) or not np.all(np.equal(np.mod(raw, 1), 0)):
            where = f" for {op_name}" if op_name else ""
            raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype.name}{where}: "
                            f"the value is not integral.\n{errors.user_line()}")
    if dtype.is_bool and raw.dtype.kind != "b" and raw.size:
        raise TypeError(f"Cannot convert {value!r} to a tensor of dtype bool")
    return raw.astype(dtype._np, copy=False)


def _unwrap_nested(v: Any):
    if isinstance(v, (list, tuple)):
        return [_unwrap_nested(e) for e in v]
    if isinstance(v, EagerTensor):
        return v._value
    if hasattr(v, "_value") and hasattr(v, "assign"):
        return v._value
    return v


def convert_to_tensor(value: Any, dtype: Any = None, dtype_hint: Any = None,
                      name: str | None = None, _op_name: str | None = None) -> Tensor:
    """``tf.convert_to_tensor``: tensors pass through; values become constants."""
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with "
                             f"dtype {value.dtype.name}: {value!r}")
        return value
    read = getattr(value, "_as_tensor", None)  # Variables and other tensor-likes
    if read is not None:
        t = read()
        if dtype is not None and t.dtype is not dtype:
            raise ValueError(f"Tensor conversion requested dtype {dtype.name} for variable with "
                             f"dtype {t.dtype.name}")
        return t
    if _conversions:
        converted = _registered_conversion(value, dtype, name)
        if converted is not None:
            return converted
    if isinstance(value, np.ndarray):
        arr = value if dtype is None else value.astype(dtype._np, copy=False)
        if arr.dtype.kind in "US":
            arr = _to_array(arr, _dtypes.string, _op_name)
        return _maybe_symbolic(wrap(arr), name)
    if isinstance(value, np.generic):
        return convert_to_tensor(np.asarray(value), dtype)
    if isinstance(value, (list, tuple)) and _packs_tensors(value):
        # a list of tensors is their stack (TF's Pack): symbolic ones need the op, and under a
        # tape it carries gradients back to each element; Python numbers take their dtype
        if dtype is None:
            dtype = next(v.dtype for v in _flat(value) if _is_tensor_like(v))
        return stack([convert_to_tensor(v, dtype) for v in value])
    if dtype is None:
        inferred = _infer_python_dtype(value)
        if dtype_hint is not None:
            hint = _dtypes.as_dtype(dtype_hint)
            if _hint_compatible(inferred, hint, value):
                inferred = hint
        dtype = inferred
    return _maybe_symbolic(wrap(_to_array(value, dtype, _op_name)))


# tf.register_tensor_conversion_function: (priority, order, base types, function), sorted
_conversions: list = []


@export("register_tensor_conversion_function")
def register_tensor_conversion_function(base_type: Any, conversion_func: Any,
                                        priority: int = 100) -> None:
    """Make convert_to_tensor (and so every op) accept instances of base_type (a type or a
    tuple of types): conversion_func(value, dtype=None, name=None, as_ref=False) returns a
    tensor, or NotImplemented to let the next function (lower priority values first) try."""
    types = base_type if isinstance(base_type, tuple) else (base_type,)
    if any(not isinstance(t, type) for t in types):
        raise TypeError(f"base_type must be a type or a tuple of types, got {base_type!r}")
    if any(issubclass(t, (str, bytes, int, float, complex, np.ndarray, np.generic, list, tuple))
           for t in types):
        raise TypeError(f"Cannot register conversions for Python numbers, strings, lists or "
                        f"NumPy arrays: {base_type!r}")
    _conversions.append((int(priority), len(_conversions), types, conversion_func))
    _conversions.sort(key=lambda c: (c[0], c[1]))


def _registered_conversion(value: Any, dtype: Any, name: str | None) -> Tensor | None:
    for _, _, types, fn in _conversions:
        if isinstance(value, types):
            out = fn(value, dtype=dtype, name=name, as_ref=False)
            if out is not NotImplemented:
                return out if isinstance(out, Tensor) else convert_to_tensor(out, dtype)
    return None


# a list holding symbolic tensors becomes their stack: an op, installed by the op library
# (ops/array_ops.py) from the layer above
stack: Any = None


def _hint_compatible(inferred: _dtypes.DType, hint: _dtypes.DType, value: Any) -> bool:
    if inferred is hint:
        return True
    if hint.is_floating or hint.is_complex:
        return inferred.is_floating or inferred.is_integer
    if hint.is_integer:
        if inferred.is_integer:
            return True
        if inferred.is_floating:
            # 2.0 joins an int tensor; 2.5 does not (TF raises)
            arr = np.asarray(_unwrap_nested(value), dtype=np.float64)
            return bool(np.all(np.mod(arr, 1) == 0))
    return False


def _flat(v):
    if isinstance(v, (list, tuple)):
        for e in v:
            yield from _flat(e)
    else:
        yield v


def _is_tensor_like(v) -> bool:
    return isinstance(v, Tensor) or (hasattr(v, "_as_tensor") and hasattr(v, "dtype"))


def _packs_tensors(value: list | tuple) -> bool:
    """Whether a nested list must become a Pack op: it holds a symbolic tensor, or a tensor or
    variable while a gradient tape records."""
    recording = bool(_state.tapes)
    return any(_is_symbolic(v) or (recording and _is_tensor_like(v)) for v in _flat(value))


def _is_symbolic(v) -> bool:
    return isinstance(v, Tensor) and not isinstance(v, EagerTensor)


def _maybe_symbolic(t: EagerTensor, name: str = "Const") -> Tensor:
    """Inside a graph, constants become graph nodes (so v1 sessions and exports see them),
    named `name` as in TensorFlow."""
    graph = _state.graph
    if graph is None:
        return t
    out = graph.constant(t._value)
    return out if name == "Const" else name_output(out, name)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const") -> Tensor:
    """``tf.constant``: a tensor from a Python/NumPy value, optionally cast and reshaped."""
    if isinstance(value, Tensor) and not isinstance(value, EagerTensor):
        return value
    if isinstance(value, EagerTensor):
        arr = value._value
    else:
        arr = None
    dt = None if dtype is None else _dtypes.as_dtype(dtype)
    if arr is None:
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            arr = np.asarray(value)
            if arr.dtype.kind in "US":
                arr = _to_array(arr, _dtypes.string, "Const")
        else:
            arr = _to_array(value, dt or _infer_python_dtype(value), "Const")
    if dt is not None and arr.dtype != dt._np:
        arr = arr.astype(dt._np)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), shape).copy()
        elif arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        else:
            raise TypeError(f"Eager execution of tf.constant with unsupported shape: value has "
                            f"{arr.size} elements, shape {list(shape)} needs {int(np.prod(shape))}")
    return _maybe_symbolic(wrap(arr), name)
