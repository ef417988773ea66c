"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import Optimizer, check_update, scalar_safe, var_spec


@op("KerasApplyAdadelta", stateful=True, shape=var_spec)
@scalar_safe
def _apply_adadelta(grad, lr, *, var, accum_grad, accum_var, rho, epsilon):
    """E[g^2] = rho E[g^2] + (1 - rho) g^2; d = sqrt(E[d^2] + eps) / sqrt(E[g^2] + eps) * g;
    E[d^2] = rho E[d^2] + (1 - rho) d^2; var -= lr * d."""
    check_update("KerasApplyAdadelta", grad, var)
    new_accum = np.multiply(accum_grad._value, rho)
    new_accum += np.multiply(np.square(grad), 1.0 - rho)
    update = np.sqrt(np.add(accum_var._value, epsilon))
    update /= np.sqrt(np.add(new_accum, epsilon))
    update *= grad
    new_accum_var = np.multiply(accum_var._value, rho)
    new_accum_var += np.multiply(np.square(update), 1.0 - rho)
    new = np.subtract(var._value, np.multiply(update, float(lr)))
    accum_grad._value, accum_var._value, var._value = new_accum, new_accum_var, new
    return new


class Adadelta(Optimizer):
    """Adadelta (Zeiler 2012) with Keras 2's defaults: learning rate 0.001, rho 0.95."""

    _slot_names = ("accum_grad", "accum_var")

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.95, epsilon: float = 1e-7,
                 name: str = "Adadelta", **kwargs: Any):
        super().__init__(name, learning_rate, **kwargs)
        self.rho = float(rho)
        self.epsilon = float(epsilon)

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_adadelta, grad, lr, var=var, accum_grad=slots["accum_grad"],
                     accum_var=slots["accum_var"], rho=self.rho, epsilon=self.epsilon)

    def _hyper_config(self) -> dict[str, Any]:
        return {"rho": self.rho, "epsilon": self.epsilon}
