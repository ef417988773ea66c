"""Variable reads and writes. Stateful: never folded, merged or reordered by the optimizer."""

from __future__ import annotations

from typing import Any

from tapeflow.framework import errors
from tapeflow.framework.dispatch import apply, op


def _var_spec(*, var):
    return tuple(var.shape.as_tuple()) if var.shape.rank is not None else None, var.dtype


@op("ReadVariableOp", stateful=True, shape=lambda *, var: _var_spec(var=var))
def _read(*, var):
    value = var._value
    if value is None:
        raise errors.FailedPreconditionError(
            None, "ReadVariableOp",
            f"Attempting to use uninitialized value {var.name[:-2]}\n{errors.user_line()}")
    return value


@op("AssignVariableOp", stateful=True, shape=lambda v, *, var: _var_spec(var=var))
def _assign(value, *, var):
    if value.dtype != var.dtype._np:
        raise errors.InvalidArgumentError(
            None, "AssignVariableOp",
            f"Cannot assign a {value.dtype} value to variable {var.name} of dtype "
            f"{var.dtype.name}\n{errors.user_line()}")
    if var._shape.rank is not None and not var._shape.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            None, "AssignVariableOp",
            f"Cannot assign a value of shape {list(value.shape)} to variable {var.name} of "
            f"shape {var.shape}\n{errors.user_line()}")
    var._value = value.copy() if value.base is not None or not value.flags.writeable else value
    return value


@op("AssignAddVariableOp", stateful=True, shape=lambda v, *, var: _var_spec(var=var))
def _assign_add(delta, *, var):
    var._value = _read.kernel(var=var) + delta
    return var._value


@op("AssignSubVariableOp", stateful=True, shape=lambda v, *, var: _var_spec(var=var))
def _assign_sub(delta, *, var):
    var._value = _read.kernel(var=var) - delta
    return var._value


def _as_value(var, value: Any):
    from tapeflow.framework.constant import convert_to_tensor

    return convert_to_tensor(value, dtype_hint=var.dtype) if not hasattr(value, "dtype") else value


def read_variable(var):
    """The variable's current value as a tensor (a read node when tracing)."""
    return apply(_read, var=var)


def assign(var, value: Any):
    return apply(_assign, _as_value(var, value), var=var)


def assign_add(var, delta: Any):
    return apply(_assign_add, _as_value(var, delta), var=var)


def assign_sub(var, delta: Any):
    return apply(_assign_sub, _as_value(var, delta), var=var)
