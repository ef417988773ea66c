"""Variable reads and writes. Stateful: never folded, merged or reordered by the optimizer."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import wrap
from tapeflow.framework.variable import Variable


def _var_spec(*, var):
    return tuple(var.shape.as_tuple()) if var.shape.rank is not None else None, var.dtype


def _emit_read(node, args: list[str], bind) -> str:
    """Graphs read the variable's array directly (no kernel frame)."""
    return f"{bind(node.attrs['var'])}._value"


@op("ReadVariableOp", variable="read", shape=lambda *, var: _var_spec(var=var), emit=_emit_read)
def _read(*, var):
    value = var._value
    if value is None:
        raise errors.FailedPreconditionError(
            None, "ReadVariableOp",
            f"Attempting to use uninitialized value {var.name[:-2]}\n{errors.user_line()}")
    return value


def _set(var: Any, value: np.ndarray) -> np.ndarray:
    """AssignVariableOp after the trace checked dtype and shape (never aliases a view)."""
    var._value = value if value.base is None and value.flags.writeable else value.copy()
    return value


def _add(var: Any, delta: np.ndarray) -> np.ndarray:
    var._value = out = np.add(var._value, delta)
    return out


def _subtract(var: Any, delta: np.ndarray) -> np.ndarray:
    var._value = out = np.subtract(var._value, delta)
    return out


def _assign_add_into(var: Any, delta: np.ndarray) -> np.ndarray:
    """AssignAdd writing into `delta`, a dying fresh buffer (the old value stays intact)."""
    var._value = np.add(var._value, delta, out=delta)
    return delta


def _assign_sub_into(var: Any, delta: np.ndarray) -> np.ndarray:
    var._value = np.subtract(var._value, delta, out=delta)
    return delta


def _emit_write(fast):
    """Graphs call `fast` directly when the traced value matches the variable's spec."""

    def emit(node, args: list[str], bind) -> str | None:
        var, value = node.attrs["var"], node.inputs[0]
        if (value.dtype is var.dtype and value.shape.is_fully_defined()
                and value.shape == var.shape):
            return f"{bind(fast)}({bind(var)}, {args[0]})"
        return None

    return emit


def _emit_write_into(fast):
    def emit(node, args: list[str], bind) -> str | None:
        if node.inputs[0].dtype is not node.attrs["var"].dtype:
            return None
        return f"{bind(fast)}({bind(node.attrs['var'])}, {args[0]})"

    return emit


@op("AssignVariableOp", variable="assign", shape=lambda v, *, var: _var_spec(var=var),
    emit=_emit_write(_set))
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


@op("AssignAddVariableOp", variable="write", shape=lambda v, *, var: _var_spec(var=var),
    emit=_emit_write(_add), emit_into=_emit_write_into(_assign_add_into))
def _assign_add(delta, *, var):
    var._value = _read.kernel(var=var) + delta
    return var._value


@op("AssignSubVariableOp", variable="write", shape=lambda v, *, var: _var_spec(var=var),
    emit=_emit_write(_subtract), emit_into=_emit_write_into(_assign_sub_into))
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


# --- Variable's reading and writing methods, installed on the framework's class from here ------


def _variable_read_value(self: Variable):
    """The current value (eager) or a read node (graph). Under a tape, reads go through an
    Identity of the variable itself, so gradients reach the variable (as TF's ReadVariableOp
    does), traced or not: ``tf.convert_to_tensor(v) * 3`` has gradient 3 for v."""
    eager = _state.graph is None
    if eager and self._value is None:
        return read_variable(self)  # the uninitialized-value error
    if _state.tapes:
        from tapeflow.ops.array_ops import _identity

        return apply(_identity, self)
    return wrap(self._value) if eager else read_variable(self)


def _variable_assign(self: Variable, value: Any, use_locking: bool = False,
                     name: str | None = None, read_value: bool = True):
    """Set the value; returns the variable (eager) or the assign op's output (graph)."""
    out = assign(self, value)
    return self if (_state.graph is None and read_value) else out


def _variable_assign_add(self: Variable, delta: Any, use_locking: bool = False,
                         name: str | None = None, read_value: bool = True):
    out = assign_add(self, delta)
    return self if (_state.graph is None and read_value) else out


def _variable_assign_sub(self: Variable, delta: Any, use_locking: bool = False,
                         name: str | None = None, read_value: bool = True):
    out = assign_sub(self, delta)
    return self if (_state.graph is None and read_value) else out


def _variable_initializer(self: Variable):
    """compat.v1: the op that sets the initial value when run in a Session."""
    if self._initial_value is None:
        return assign(self, wrap(np.array(self._value)))
    return assign(self, self._initial_value)


Variable.read_value = Variable.value = _variable_read_value
Variable._read = read_variable  # what a graph converts a variable input to (no tape link)
Variable.assign = _variable_assign
Variable.assign_add = _variable_assign_add
Variable.assign_sub = _variable_assign_sub
Variable.initializer = property(_variable_initializer)
