"""Tensor (the common base) and EagerTensor (a value computed now, backed by a NumPy array).

Operators (``+``, ``@``, ``[]`` ...) are attached by the op modules that define them, so this
file holds no math: one op, one place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.shapes import TensorShape

# set once any tensor has been given a Keras mask: until then layers skip looking for masks
masks_attached = False


class Tensor:
    """A multi-dimensional array with a dtype and a (possibly partially known) shape."""

    __slots__ = ("__weakref__", "_mask")
    __array_priority__ = 100  # make NumPy defer to our reflected operators

    @property
    def _keras_mask(self) -> Any:
        """The padding mask Keras layers attach to their outputs, or None."""
        return getattr(self, "_mask", None)

    @_keras_mask.setter
    def _keras_mask(self, mask: Any) -> None:
        global masks_attached
        masks_attached = True
        self._mask = mask

    @property
    def shape(self) -> TensorShape:
        raise NotImplementedError(f"{type(self).__name__} must implement shape")

    @property
    def dtype(self) -> _dtypes.DType:
        raise NotImplementedError(f"{type(self).__name__} must implement dtype")

    @property
    def ndim(self) -> int | None:
        return self.shape.rank

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def device(self) -> str:
        """Where the tensor was made: the tf.device scope it was computed in, else CPU:0."""
        return getattr(self, "_device", None) or "/job:localhost/replica:0/task:0/device:CPU:0"

    def __hash__(self) -> int:
        return id(self)

    __iter__: Any
    __len__: Any


class EagerTensor(Tensor):
    """A concrete tensor whose value lives in a NumPy array."""

    __slots__ = ("_value", "_device")

    def __init__(self, value: Any, dtype: Any = None):
        arr = np.asarray(value, dtype=None if dtype is None else _dtypes.as_dtype(dtype)._np)
        self._value = arr

    @property
    def shape(self) -> TensorShape:
        shape = _new(TensorShape)  # NumPy's shape is already a tuple of ints: no checks
        shape._dims = self._value.shape
        return shape

    @property
    def dtype(self) -> _dtypes.DType:
        return _dtypes.from_numpy(self._value.dtype)

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def name(self) -> str:
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")

    def numpy(self) -> np.ndarray | Any:
        """The value as a NumPy array (a NumPy scalar for rank 0), as TF returns it."""
        v = self._value
        if v.ndim == 0:
            return v[()]
        return v

    def __array__(self, dtype=None, copy=None):
        if dtype is None:
            return self._value
        return self._value.astype(dtype)

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("Scalar tensor has no `len()`")
        return self._value.shape[0]

    def __bool__(self) -> bool:
        return bool(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __index__(self) -> int:
        if not self.dtype.is_integer:
            raise TypeError(f"Only integer tensors can be used as an index, got {self.dtype.name}")
        return int(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __format__(self, spec: str) -> str:
        if self._value.ndim == 0:
            return format(self._value[()], spec)
        return format(str(self), spec)

    # __iter__ (unstack, an op) is installed by the op library: ops/array_ops.py

    def __copy__(self) -> EagerTensor:
        return self

    def __deepcopy__(self, memo) -> EagerTensor:
        return wrap(self._value.copy())

    def __reduce__(self):
        return EagerTensor, (self._value,)

    def __str__(self) -> str:
        text = _np_str(self._value)
        if "\n" in text:  # multi-line values start on their own line, as TF prints them
            text = "\n" + text
        return f"tf.Tensor({text}, shape={self.shape}, dtype={self.dtype.name})"

    def __repr__(self) -> str:
        return (f"<tf.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={_np_repr(self._value)}>")


def _np_str(v: np.ndarray) -> str:
    if v.dtype == object:
        as_bytes = np.vectorize(lambda s: s if isinstance(s, bytes) else str(s).encode())
        v = as_bytes(v) if v.size else v
    return np.array2string(v) if v.ndim else str(v[()])


def _np_repr(v: np.ndarray) -> str:
    if v.ndim == 0:  # NumPy 2 reprs scalars as np.float32(54.0); TF shows numpy=54.0
        s = v[()]
        return repr(s) if isinstance(s, (bytes, str)) else str(s)
    return repr(v)


_new = object.__new__


def wrap(arr: np.ndarray) -> EagerTensor:
    """Wrap a NumPy array (no copy, no checks): the hot path of eager dispatch."""
    t = _new(EagerTensor)
    t._value = arr
    return t


def is_tensor(x: Any) -> bool:
    """``tf.is_tensor``: True for tensors (eager or symbolic) and variables."""
    from tapeflow.framework.variable import Variable

    return isinstance(x, (Tensor, Variable))
