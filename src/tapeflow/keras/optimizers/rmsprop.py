"""RMSprop with Keras 2's two epsilon placements (outside the root without momentum, inside with).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import Optimizer, check_update, scalar_safe, var_spec


@op("KerasApplyRMSProp", stateful=True, shape=var_spec)
@scalar_safe
def _apply_rmsprop(grad, lr, *, var, rms, mg, mom, rho, momentum, epsilon):
    """rms = rho rms + (1 - rho) g^2; centered: mg = rho mg + (1 - rho) g, denom = rms - mg^2.

    Without momentum: var -= lr g / (sqrt(denom) + eps).
    With momentum:    mom = momentum mom + lr g / sqrt(denom + eps); var -= mom.
    """
    check_update("KerasApplyRMSProp", grad, var)
    lr = float(lr)
    new_rms = np.square(grad)
    new_rms *= 1.0 - rho
    new_rms += rho * rms._value
    denom = new_rms
    if mg is not None:
        new_mg = np.multiply(grad, 1.0 - rho)
        new_mg += rho * mg._value
        mg._value = new_mg
        denom = new_rms - np.square(new_mg)
    if mom is not None:
        root = np.add(denom, epsilon)
        np.sqrt(root, out=root)
        new_mom = np.multiply(grad, lr)
        new_mom /= root
        new_mom += momentum * mom._value
        mom._value = new_mom
        new = np.subtract(var._value, new_mom)
    else:
        root = np.sqrt(denom)
        root += epsilon
        new = np.multiply(grad, lr)
        new /= root
        np.subtract(var._value, new, out=new)
    rms._value = new_rms
    var._value = new
    return new


class RMSprop(Optimizer):
    """RMSprop (Hinton) with Keras 2's defaults: rho 0.9, epsilon 1e-7, optional centering."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop",
                 **kwargs: Any):
        super().__init__(name, learning_rate, **kwargs)
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)

    def _active_slots(self) -> tuple[str, ...]:
        names = ("rms",)
        if self.momentum > 0:
            names += ("momentum",)
        if self.centered:
            names += ("mg",)
        return names

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_rmsprop, grad, lr, var=var, rms=slots["rms"], mg=slots.get("mg"),
                     mom=slots.get("momentum"), rho=self.rho, momentum=self.momentum,
                     epsilon=self.epsilon)

    def _hyper_config(self) -> dict[str, Any]:
        return {"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                "centered": self.centered}
