"""``AutoCastVariable``: a float32 variable that reads as the compute dtype inside a layer's call.

Under a mixed policy a layer's float weights are created in float32 and handed to the layer
wrapped in an ``AutoCastVariable``. While the layer's ``call`` runs (``enable_auto_cast_variables``
set by ``Layer.__call__``), every read is ``cast(variable, compute_dtype)``: a real Cast op on
the tape and in traced graphs, so the gradient reaching the float32 variable is float32. Outside
a call (optimizers, checkpoints, ``numpy()``) it reads as the float32 variable.

The wrapper has no ``_value``: the op dispatcher's fast path (which reads ``_value`` of plain
tensors and variables) misses it and converts it through ``_as_tensor``, so no op needs to know
about it. ``Layer.weights`` and ``trainable_variables`` hold the float32 variables themselves,
which is what optimizers and checkpoints update.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.variable import Variable


class _AutocastState(threading.local):
    dtype: _dtypes.DType | None = None


_autocast = _AutocastState()


def autocast_dtype() -> _dtypes.DType | None:
    """The dtype AutoCastVariables read as right now (None: their own)."""
    return _autocast.dtype


@contextlib.contextmanager
def enable_auto_cast_variables(dtype: Any) -> Iterator[None]:
    """Within the block, AutoCastVariables read as floating `dtype` (None: as stored)."""
    previous = _autocast.dtype
    _autocast.dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    try:
        yield
    finally:
        _autocast.dtype = previous


class AutoCastVariable:
    """Wraps a float32 ``Variable``; reads cast to the active compute dtype (Keras 2's class)."""

    __slots__ = ("_variable",)
    __array_priority__ = 100

    def __init__(self, variable: Variable):
        if not isinstance(variable, Variable) or not variable.dtype.is_floating:
            raise ValueError(f"AutoCastVariable wraps a floating Variable, got {variable!r}")
        object.__setattr__(self, "_variable", variable)

    def __getattr__(self, name: str) -> Any:
        if name == "_value":  # keep the dispatcher's fast path off: it must call _as_tensor
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_variable"), name)

    # --- reading --------------------------------------------------------------------------
    @property
    def _cast_dtype(self) -> _dtypes.DType:
        dtype = _autocast.dtype
        return self._variable.dtype if dtype is None or not dtype.is_floating else dtype

    def _as_tensor(self) -> Any:
        variable = self._variable
        dtype = _autocast.dtype
        if dtype is None or dtype is variable.dtype or not dtype.is_floating:
            return variable.read_value()
        from tapeflow.ops.math_ops import cast

        return cast(variable, dtype)

    def read_value(self) -> Any:
        return self._as_tensor()

    value = read_value

    @property
    def dtype(self) -> _dtypes.DType:
        """The stored dtype (float32), as in Keras; reads inside a call give the compute dtype."""
        return self._variable.dtype

    @property
    def true_dtype(self) -> _dtypes.DType:
        return self._variable.dtype

    def numpy(self) -> Any:
        return self._variable.numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._variable.__array__(dtype)

    # --- writing: values of any float dtype are stored in the variable's dtype -------------
    def _stored(self, value: Any) -> Any:
        from tapeflow.framework.tensor import Tensor
        from tapeflow.ops.math_ops import cast

        if isinstance(value, AutoCastVariable):
            value = value._variable
        if isinstance(value, (Tensor, Variable)) and value.dtype is not self._variable.dtype \
                and value.dtype.is_floating:
            value = cast(value, self._variable.dtype)
        return value

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> Any:
        out = self._variable.assign(self._stored(value), read_value=read_value)
        return self if out is self._variable else out

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        out = self._variable.assign_add(self._stored(delta), read_value=read_value)
        return self if out is self._variable else out

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> Any:
        out = self._variable.assign_sub(self._stored(delta), read_value=read_value)
        return self if out is self._variable else out

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._variable, name, value)

    def __repr__(self) -> str:
        v = self._variable
        return (f"<AutoCastVariable '{v.name}' shape={v.shape} dtype={v.dtype.name} "
                f"dtype_to_cast_to={self._cast_dtype.name}, numpy={v.numpy()!r}>")

    def __hash__(self) -> int:
        return id(self)

    def __len__(self) -> int:
        return len(self._variable)

    def __bool__(self) -> bool:
        return bool(self._as_tensor())


def _install_operators() -> None:
    """The arithmetic, comparison and indexing operators of tensors, on the wrapper."""
    from tapeflow.ops import operators

    for name, fn in operators._OPERATORS.items():
        setattr(AutoCastVariable, name, fn)
    AutoCastVariable.__eq__ = operators._eq
    AutoCastVariable.__ne__ = operators._ne
    AutoCastVariable.__hash__ = lambda self: id(self)


_install_operators()


def create_autocast_variable(variable: Variable) -> AutoCastVariable:
    return AutoCastVariable(variable)
