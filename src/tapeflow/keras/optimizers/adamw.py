"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter), as tf.keras.optimizers.AdamW.

Before each Adam step every variable not excluded shrinks by ``var * weight_decay * lr``, with the
step's learning rate; the decay never enters the moments, unlike an L2 term in the loss.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.adam import Adam, _apply_adam
from tapeflow.keras.optimizers.optimizer import check_update, scalar_safe, var_spec


@op("KerasDecayWeights", stateful=True, shape=var_spec)
@scalar_safe
def _decay_weights(grad, lr, *, var, weight_decay):
    """var -= var * weight_decay * lr (the gradient input only orders it before the update)."""
    check_update("KerasDecayWeights", grad, var)
    new = np.multiply(var._value, weight_decay)
    new *= float(lr)
    np.subtract(var._value, new, out=new)
    var._value = new
    return new


class AdamW(Adam):
    """Adam with decoupled weight decay; Keras 2's defaults (``weight_decay=0.004``)."""

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.004,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, name: str = "AdamW", **kwargs: Any):
        if weight_decay is None or float(weight_decay) < 0.0:
            raise ValueError(f"AdamW: `weight_decay` must be a non-negative float, got "
                             f"{weight_decay!r}")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name, **kwargs)
        self.weight_decay = float(weight_decay)
        self._excluded_ids: set[int] = set()
        self._excluded_names: list[str] = []

    def exclude_from_weight_decay(self, var_list: Iterable[Variable] | None = None,
                                  var_names: Iterable[str] | None = None) -> None:
        """Exempt variables (or any whose name contains one of `var_names`) from the decay."""
        self._excluded_ids.update(v._unique_id for v in var_list or ())
        self._excluded_names.extend(var_names or ())

    def _decays(self, var: Variable) -> bool:
        if not self.weight_decay or var._unique_id in self._excluded_ids:
            return False
        return not any(re.search(name, var.name) for name in self._excluded_names)

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        if self._decays(var):
            apply(_decay_weights, grad, lr, var=var, weight_decay=self.weight_decay)
        return apply(_apply_adam, grad, lr, self._iterations, var=var, m=slots["m"],
                     v=slots["v"], vhat=slots.get("vhat"), beta_1=self.beta_1,
                     beta_2=self.beta_2, epsilon=self.epsilon)

    def _hyper_config(self) -> dict[str, Any]:
        return {"weight_decay": self.weight_decay, **super()._hyper_config()}
