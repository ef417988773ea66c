"""TensorSpec: the shape and dtype a tensor must have (``tf.TensorSpec``), without a value."""

from __future__ import annotations

from typing import Any

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.shapes import TensorShape, as_shape


class TensorSpec:
    """A tensor's `shape` (dims may be None) and `dtype`; used by signatures and datasets."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape: Any = None, dtype: Any = _dtypes.float32, name: str | None = None):
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._name = name

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def name(self) -> str | None:
        return self._name

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> TensorSpec:
        return cls(tensor.shape, tensor.dtype, name)

    def is_compatible_with(self, other: Any) -> bool:
        """True when `other` (a spec or tensor) has a matching dtype and a compatible shape."""
        if not hasattr(other, "shape") or not hasattr(other, "dtype"):
            return False
        return (_dtypes.as_dtype(other.dtype) is self._dtype
                and self._shape.is_compatible_with(as_shape(tuple(other.shape))))

    def most_specific_common_supertype(self, others: list) -> TensorSpec | None:
        if any(o.dtype is not self._dtype for o in others):
            return None
        return TensorSpec(self._shape.most_specific_common_supertype([o.shape for o in others]),
                          self._dtype)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, TensorSpec) and self._dtype is other._dtype
                and self._shape == other._shape and self._name == other._name)

    def __hash__(self) -> int:
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"
