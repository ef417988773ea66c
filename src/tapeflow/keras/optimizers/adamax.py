"""Adamax: Adam with the infinity norm in place of the second moment (Keras 2 update rule)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import Optimizer, check_update, scalar_safe, var_spec


@op("KerasApplyAdamax", stateful=True, shape=var_spec)
@scalar_safe
def _apply_adamax(grad, lr, step, *, var, m, u, beta_1, beta_2, epsilon):
    """m = b1 m + (1 - b1) g; u = max(b2 u, |g|); var -= lr / (1 - b1^t) * m / (u + eps)."""
    check_update("KerasApplyAdamax", grad, var)
    t = float(step) + 1.0
    new_m = np.multiply(m._value, beta_1)
    new_m += np.multiply(grad, 1.0 - beta_1)
    new_u = np.maximum(np.multiply(u._value, beta_2), np.abs(grad))
    denom = np.add(new_u, epsilon)
    new = np.multiply(new_m, float(lr) / (1.0 - beta_1 ** t))
    new /= denom
    np.subtract(var._value, new, out=new)
    m._value, u._value, var._value = new_m, new_u, new
    return new


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7) with Keras 2's defaults (epsilon 1e-7)."""

    _slot_names = ("m", "v")

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Adamax", **kwargs: Any):
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_adamax, grad, lr, self._iterations, var=var, m=slots["m"],
                     u=slots["v"], beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)

    def _hyper_config(self) -> dict[str, Any]:
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
