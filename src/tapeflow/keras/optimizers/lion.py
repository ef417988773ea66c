"""Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), as tf-keras 2.21:
the step is the sign of an interpolation of the momentum and the gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import Optimizer, check_update, scalar_safe, var_spec


@op("KerasApplyLion", stateful=True, shape=var_spec)
@scalar_safe
def _apply_lion(grad, lr, *, var, m, beta_1, beta_2):
    """var -= lr * sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g."""
    check_update("KerasApplyLion", grad, var)
    direction = np.sign(np.multiply(m._value, beta_1) + np.multiply(grad, 1.0 - beta_1))
    new = np.subtract(var._value, np.multiply(direction, float(lr)).astype(var._value.dtype))
    m._value = np.multiply(m._value, beta_2) + np.multiply(grad, 1.0 - beta_2)
    var._value = new
    return new


class Lion(Optimizer):
    """Lion: ``var -= lr * sign(beta_1 * m + (1 - beta_1) * g)``, then
    ``m = beta_2 * m + (1 - beta_2) * g``. An IndexedSlices gradient gives the dense result
    (tf-keras decays the momentum of every row)."""

    _slot_names = ("m",)

    def __init__(self, learning_rate: Any = 0.0001, beta_1: float = 0.9, beta_2: float = 0.99,
                 name: str = "Lion", **kwargs: Any):
        if not 0.0 < beta_1 <= 1.0:
            raise ValueError(f"Lion: `beta_1`={beta_1} must be between ]0, 1]. Otherwise, the "
                             "optimizer degenerates to SignSGD.")
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_lion, grad, lr, var=var, m=slots["m"], beta_1=self.beta_1,
                     beta_2=self.beta_2)

    def _hyper_config(self) -> dict[str, Any]:
        return {"beta_1": self.beta_1, "beta_2": self.beta_2}
