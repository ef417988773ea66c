"""TensorFlow-named dtypes, each a thin wrapper over a NumPy dtype."""

from __future__ import annotations

import builtins
from typing import Any

import ml_dtypes
import numpy as np


class DType:
    """A tensor element type (``tf.float32`` ...), mapped one-to-one onto a NumPy dtype."""

    __slots__ = ("name", "_np", "is_floating", "is_integer", "is_bool", "is_complex", "size")

    def __init__(self, name: str, np_dtype: Any):
        self.name = name
        self._np = np.dtype(np_dtype)
        kind = self._np.kind
        self.is_floating = kind == "f" or self._np == _BFLOAT16
        self.is_integer = kind in "iu"
        self.is_bool = kind == "b"
        self.is_complex = kind == "c"
        self.size = self._np.itemsize

    @property
    def as_numpy_dtype(self) -> type:
        return self._np.type

    @property
    def is_unsigned(self) -> bool:
        return self._np.kind == "u"

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def min(self):
        return ml_dtypes.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return ml_dtypes.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    @property
    def is_differentiable(self) -> bool:
        return self.is_floating or self.is_complex

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):
        return as_dtype, (self.name,)


# bfloat16 comes from ml_dtypes, which registers it with NumPy (casts and ufuncs work on it)
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

float16 = DType("float16", np.float16)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16)
half = float16
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
double = float64
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
bool = DType("bool", np.bool_)  # noqa: A001 - TF's public name
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
string = DType("string", np.object_)

_ALL = [float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
        uint64, bool, complex64, complex128, string]
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, double=float64)
_BY_NP = {d._np: d for d in _ALL}
_BY_NP[np.dtype(np.str_)] = string
_BY_NP[np.dtype(np.bytes_)] = string
_BY_TYPE = {d._np.type: d for d in _ALL}
_BY_TYPE.update({float: float32, int: int32, np.str_: string, np.bytes_: string, str: string,
                 bytes: string})
_BY_TYPE[builtins.bool] = bool


def as_dtype(value: Any) -> DType:
    """Convert a DType, NumPy dtype, Python type or name to a tapeflow DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        d = _BY_NAME.get(value)
        if d is not None:
            return d
    elif isinstance(value, type):
        d = _BY_TYPE.get(value)
        if d is not None:
            return d
    else:
        try:
            npd = np.dtype(value)
        except TypeError:
            npd = None
        if npd is not None:
            d = _BY_NP.get(npd)
            if d is None and npd.kind in "SU":
                d = string
            if d is not None:
                return d
    raise TypeError(f"Cannot convert {value!r} to a tapeflow DType")


def from_numpy(np_dtype: np.dtype) -> DType:
    """Fast path: the DType of a NumPy array's dtype."""
    d = _BY_NP.get(np_dtype)
    if d is None:
        d = as_dtype(np_dtype)
    return d
