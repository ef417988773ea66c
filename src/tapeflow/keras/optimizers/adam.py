"""Adam (Keras 2: epsilon outside the square root, bias correction folded into the rate)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import (
    Optimizer,
    adam_moments,
    bias_corrected_rate,
    check_update,
    scalar_safe,
    var_bytes,
    var_spec,
)
from tapeflow.kernels import adam as adam_kernel


def _workspace(node: Any) -> int:
    """The new m, v and value (the one-pass loop), plus NumPy's temporary without it."""
    fused = node.attrs["vhat"] is None and adam_kernel.applies(node.attrs["var"].dtype._np)
    return var_bytes(3 if fused else 4)(node)


@op("KerasApplyAdam", stateful=True, shape=var_spec, workspace=_workspace)
@scalar_safe
def _apply_adam(grad, lr, step, *, var, m, v, vhat, beta_1, beta_2, epsilon):
    """t = step + 1; lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t);
    m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); var -= lr_t * m / (sqrt(v) + eps).

    With amsgrad (`vhat` given), the running maximum of v replaces v in the denominator.
    """
    check_update("KerasApplyAdam", grad, var)
    lr_t = bias_corrected_rate(lr, step, beta_1, beta_2, var._value.dtype)
    fused = None if vhat is not None else adam_kernel.update(
        grad, m._value, v._value, var._value, lr_t, beta_1, beta_2, epsilon)
    if fused is not None:  # one pass over the variable (numba)
        m._value, v._value, var._value = fused
        return fused[2]
    new_m, new_v = adam_moments(grad, m, v, beta_1, beta_2)
    if vhat is not None:
        new_vhat = np.maximum(vhat._value, new_v)
        vhat._value = new_vhat
        denom = np.sqrt(new_vhat)
    else:
        denom = np.sqrt(new_v)
    denom += epsilon
    new = np.multiply(new_m, lr_t)
    new /= denom
    np.subtract(var._value, new, out=new)
    m._value, v._value, var._value = new_m, new_v, new
    return new


class Adam(Optimizer):
    """Adam (Kingma & Ba) with Keras 2's defaults: epsilon 1e-7, optional AMSGrad."""

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam",
                 **kwargs: Any):
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _active_slots(self) -> tuple[str, ...]:
        return ("m", "v", "vhat") if self.amsgrad else ("m", "v")

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_adam, grad, lr, self._iterations, var=var, m=slots["m"],
                     v=slots["v"], vhat=slots.get("vhat"), beta_1=self.beta_1,
                     beta_2=self.beta_2, epsilon=self.epsilon)

    def _hyper_config(self) -> dict[str, Any]:
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                "amsgrad": self.amsgrad}
