"""SGD with optional momentum and Nesterov momentum (Keras 2 update rule, one op per variable)."""

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
    var_spec,
)
from tapeflow.kernels import scatter
from tapeflow.ops.indexed_slices import IndexedSlices


@op("KerasApplyGradientDescent", stateful=True, shape=var_spec)
@scalar_safe
def _apply_sgd(grad, lr, *, var):
    """var -= lr * grad."""
    check_update("KerasApplyGradientDescent", grad, var)
    new = np.multiply(grad, float(lr))
    np.subtract(var._value, new, out=new)
    var._value = new
    return new


@op("KerasSparseApplyGradientDescent", stateful=True, shape=var_spec)
def _sparse_apply_sgd(values, indices, lr, *, var):
    """var[indices] -= lr * values (duplicates add up): only the touched rows are written."""
    indices = indices.reshape(-1)
    check_rows("KerasSparseApplyGradientDescent", values, indices, var)
    new = owned_buffer(var)
    scatter.add_rows(new, indices, np.multiply(values, -float(lr)).astype(new.dtype, copy=False))
    var._value = new
    return new


@op("KerasApplyMomentum", stateful=True, shape=var_spec)
@scalar_safe
def _apply_momentum(grad, lr, *, var, accum, momentum, nesterov):
    """accum = momentum * accum - lr * grad; var += accum (Nesterov: momentum * accum - lr * g)."""
    check_update("KerasApplyMomentum", grad, var)
    scaled = np.multiply(grad, float(lr))
    new_accum = np.multiply(accum._value, momentum)
    new_accum -= scaled
    if nesterov:
        step = np.multiply(new_accum, momentum)
        step -= scaled
        step += var._value
        new = step
    else:
        new = np.add(var._value, new_accum)
    accum._value = new_accum
    var._value = new
    return new


class SGD(Optimizer):
    """Gradient descent: ``var -= lr * grad``, with (Nesterov) momentum when momentum > 0."""

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 name: str = "SGD", **kwargs: Any):
        if isinstance(momentum, (int, float)) and not 0 <= momentum <= 1:
            raise ValueError(f"SGD: `momentum` must be between [0, 1], got {momentum}")
        super().__init__(name, learning_rate, **kwargs)
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _active_slots(self) -> tuple[str, ...]:
        return ("momentum",) if self.momentum > 0 else ()

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        if self.momentum > 0:
            return apply(_apply_momentum, grad, lr, var=var, accum=slots["momentum"],
                         momentum=self.momentum, nesterov=self.nesterov)
        return apply(_apply_sgd, grad, lr, var=var)

    def _update_sparse(self, grad: IndexedSlices, var: Variable, lr: Any,
                       slots: dict[str, Variable]) -> Any:
        if self.momentum > 0:
            return super()._update_sparse(grad, var, lr, slots)
        return apply(_sparse_apply_sgd, grad.values, grad.indices, lr, var=var)

    def _hyper_config(self) -> dict[str, Any]:
        return {"momentum": self.momentum, "nesterov": self.nesterov}
