"""Adagrad: accumulator starts at 0.1; tf.keras.optimizers.Adagrad divides by sqrt(accum + eps),
the legacy (Keras 2 optimizer_v2) one by sqrt(accum) + eps."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import (
    Optimizer,
    check_rows,
    check_update,
    owned_buffer,
    scalar_safe,
    unique_rows,
    var_spec,
)
from tapeflow.ops.indexed_slices import IndexedSlices


def _root(accum: np.ndarray, epsilon: float, inside: bool) -> np.ndarray:
    if inside:
        return np.sqrt(accum + np.asarray(epsilon, accum.dtype))
    root = np.sqrt(accum)
    root += epsilon
    return root


@op("KerasApplyAdagrad", stateful=True, shape=var_spec)
@scalar_safe
def _apply_adagrad(grad, lr, *, var, accum, epsilon, inside=False):
    """accum += g^2; var -= lr * g / (sqrt(accum) + eps) (`inside`: sqrt(accum + eps))."""
    check_update("KerasApplyAdagrad", grad, var)
    new_accum = np.square(grad)
    new_accum += accum._value
    root = _root(new_accum, epsilon, inside)
    new = np.multiply(grad, float(lr))
    new /= root
    np.subtract(var._value, new, out=new)
    accum._value = new_accum
    var._value = new
    return new


@op("KerasSparseApplyAdagrad", stateful=True, shape=var_spec)
def _sparse_apply_adagrad(values, indices, lr, *, var, accum, epsilon, inside=False):
    """The Adagrad update on the touched rows only (duplicates summed first, as Keras does);
    the other rows' accumulator and value do not change (their gradient is 0)."""
    indices = indices.reshape(-1)
    check_rows("KerasSparseApplyAdagrad", values, indices, var)
    grad, rows = unique_rows(values, indices)
    acc = owned_buffer(accum)
    acc_rows = acc[rows] + np.square(grad)
    acc[rows] = acc_rows
    new = owned_buffer(var)
    new[rows] -= np.multiply(grad, float(lr)) / _root(acc_rows, epsilon, inside)
    accum._value = acc
    var._value = new
    return new


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): per-coordinate rates shrinking with the accumulated squares."""

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad", **kwargs: Any):
        if initial_accumulator_value < 0.0:
            raise ValueError(f"Adagrad: initial_accumulator_value must be non-negative, got "
                             f"{initial_accumulator_value}")
        super().__init__(name, learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)
        self._slot_initial = self.initial_accumulator_value

    _slot_names = ("accumulator",)
    _epsilon_inside_root = True  # tf.keras.optimizers.Adagrad; the legacy class: False

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_adagrad, grad, lr, var=var, accum=slots["accumulator"],
                     epsilon=self.epsilon, inside=self._epsilon_inside_root)

    def _update_sparse(self, grad: IndexedSlices, var: Variable, lr: Any,
                       slots: dict[str, Variable]) -> Any:
        return apply(_sparse_apply_adagrad, grad.values, grad.indices, lr, var=var,
                     accum=slots["accumulator"], epsilon=self.epsilon,
                     inside=self._epsilon_inside_root)

    def _hyper_config(self) -> dict[str, Any]:
        return {"initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
