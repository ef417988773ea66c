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
def _apply_adam(grad, lr, step, *, var, m, v, vhat, beta_1, beta_2, epsilon):
    """t = step + 1; lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t);
    m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); var -= lr_t * m / (sqrt(v) + eps).

    With amsgrad (`vhat` given), the running maximum of v replaces v in the denominator.
    """
    lr_t = bias_corrected_rate(lr, step, beta_1, beta_2, var._value.dtype)
    return _update(grad, lr_t, var=var, m=m, v=v, vhat=vhat, beta_1=beta_1, beta_2=beta_2,
                   epsilon=epsilon)


@scalar_safe
def _update(grad, lr_t, *, var, m, v, vhat, beta_1, beta_2, epsilon):
    """One variable's Adam step at the bias-corrected rate `lr_t`: what both the per-variable
    op and the grouped one run, so the two give the same bits."""
    check_update("KerasApplyAdam", grad, var)
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


def _group_spec(lr, step, *grads, **attrs: Any) -> tuple:
    """The grouped update's one output: the learning rate it read (its effects are on the
    variables; no node reads their new values through it)."""
    return lr


def _group_workspace(node: Any) -> int:
    """The largest variable's new m, v and value (and vhat): the updates run one by one."""
    copies = 3 if node.attrs.get("vhats") is None else 4
    return max((copies * (v.shape.num_elements() or 0) * v.dtype.size
                for v in node.attrs["vars"]), default=0)


@op("KerasApplyAdamGroup", stateful=True, shape=_group_spec, workspace=_group_workspace,
    groups=_apply_adam)
def _apply_adam_group(lr, step, *grads, vars, ms, vs, beta_1, beta_2, epsilon, vhat=None,
                      vhats=None):
    """Adam's step for many variables sharing lr, step and the betas (``graph/passes/
    group_updates``): one executor call where each KerasApplyAdam node cost one, plus its two
    reads of lr and the step.

    Each variable gets exactly its own op's arithmetic (``_update``; the bias-corrected rate
    from the same scalars, computed once per dtype), so the bits are the per-variable ones.
    """
    rates: dict = {}
    vhats = vhats or (vhat,) * len(grads)
    for grad, var, m, v, h in zip(grads, vars, ms, vs, vhats):
        dtype = var._value.dtype
        lr_t = rates.get(dtype)
        if lr_t is None:
            lr_t = rates[dtype] = bias_corrected_rate(lr, step, beta_1, beta_2, dtype)
        _update(grad, lr_t, var=var, m=m, v=v, vhat=h, beta_1=beta_1, beta_2=beta_2,
                epsilon=epsilon)
    return lr


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
