"""FTRL-Proximal (McMahan et al. 2013), the online learner of large sparse linear models."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import Optimizer, check_update, scalar_safe, var_spec


def _power(accum: np.ndarray, lr_power: float) -> np.ndarray:
    """accum^(-lr_power); the usual -0.5 is a square root."""
    return np.sqrt(accum) if lr_power == -0.5 else np.power(accum, -lr_power)


@op("KerasApplyFtrl", stateful=True, shape=var_spec)
@scalar_safe
def _apply_ftrl(grad, lr, *, var, accum, linear, lr_power, l1, l2, l2_shrinkage, beta):
    """n' = n + g^2; z += g + 2 s var - (n'^-p - n^-p) / lr * var;
    var = (sign(z) l1 - z) / (n'^-p / lr + 2 l2') where |z| > l1, else 0; l2' = l2 + beta / 2lr.
    """
    check_update("KerasApplyFtrl", grad, var)
    lr = float(lr)
    l2 = l2 + beta / (2.0 * lr)
    old = var._value
    new_accum = np.add(accum._value, np.square(grad))
    sigma = _power(new_accum, lr_power) - _power(accum._value, lr_power)
    sigma /= lr
    new_linear = np.add(linear._value, grad)
    if l2_shrinkage > 0.0:
        new_linear += np.multiply(old, 2.0 * l2_shrinkage)
    new_linear -= sigma * old
    quadratic = _power(new_accum, lr_power) / lr + 2.0 * l2
    new = (np.sign(new_linear) * l1 - new_linear) / quadratic
    new = np.where(np.abs(new_linear) > l1, new, np.zeros_like(new)).astype(old.dtype, copy=False)
    accum._value, linear._value, var._value = new_accum, new_linear, new
    return new


class Ftrl(Optimizer):
    """FTRL with Keras 2's arguments: L1, L2, L2 shrinkage and ``beta`` folded into L2."""

    _slot_names = ("accumulator", "linear")

    def __init__(self, learning_rate: Any = 0.001, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, name: str = "Ftrl",
                 l2_shrinkage_regularization_strength: float = 0.0, beta: float = 0.0,
                 **kwargs: Any):
        checks = {"initial_accumulator_value": initial_accumulator_value,
                  "l1_regularization_strength": l1_regularization_strength,
                  "l2_regularization_strength": l2_regularization_strength,
                  "l2_shrinkage_regularization_strength": l2_shrinkage_regularization_strength}
        for key, value in checks.items():
            if value < 0.0:
                raise ValueError(f"Ftrl: `{key}` needs to be positive or zero, got {value}")
        if learning_rate_power > 0.0:
            raise ValueError(f"Ftrl: `learning_rate_power` needs to be negative or zero, got "
                             f"{learning_rate_power}")
        super().__init__(name, learning_rate, **kwargs)
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = float(l2_shrinkage_regularization_strength)
        self.beta = float(beta)

    def _create_slots(self, var: Variable) -> dict[str, Variable]:
        self.add_slot(var, "accumulator", self.initial_accumulator_value)
        self.add_slot(var, "linear", 0.0)
        return self._slots[var._unique_id][1]

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_ftrl, grad, lr, var=var, accum=slots["accumulator"],
                     linear=slots["linear"], lr_power=self.learning_rate_power,
                     l1=self.l1_regularization_strength, l2=self.l2_regularization_strength,
                     l2_shrinkage=self.l2_shrinkage_regularization_strength, beta=self.beta)

    def _hyper_config(self) -> dict[str, Any]:
        return {"initial_accumulator_value": self.initial_accumulator_value,
                "learning_rate_power": self.learning_rate_power,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "beta": self.beta,
                "l2_shrinkage_regularization_strength":
                    self.l2_shrinkage_regularization_strength}
