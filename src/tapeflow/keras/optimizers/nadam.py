"""Nadam: Adam with Nesterov momentum and Dozat's momentum schedule.

Keras 2 has two forms that differ only in the schedule's exponent: ``tf.keras.optimizers.Nadam``
uses mu_t = beta_1 (1 - 0.5 * 0.96^t), the legacy one 0.96^(0.004 t) (its ``schedule_decay``,
which Keras 2 stores under the ``decay`` key). The running product of mu_t is a variable of the
optimizer, advanced once per ``apply_gradients`` and shared by every variable's update.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.context import eager_scope
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import (
    Optimizer,
    adam_moments,
    check_update,
    scalar_safe,
    var_spec,
)


def _momentum(beta_1: float, exponent: float, t: float) -> float:
    """mu_t = beta_1 (1 - 0.5 * 0.96^(exponent * t))."""
    return beta_1 * (1.0 - 0.5 * 0.96 ** (exponent * t))


@op("KerasNadamMomentumProduct", stateful=True,
    shape=lambda step, *, product, beta_1, exponent: ((), product.dtype))
def _advance_product(step, *, product, beta_1, exponent):
    """product *= mu_t for t = step + 1; returns the new product."""
    mu_t = _momentum(beta_1, exponent, float(step) + 1.0)
    new = np.asarray(product._value * mu_t, dtype=product._value.dtype)
    product._value = new
    return new


@op("KerasApplyNadam", stateful=True, shape=var_spec)
@scalar_safe
def _apply_nadam(grad, lr, step, product, *, var, m, v, beta_1, beta_2, epsilon, exponent):
    """m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2);
    m_hat = mu_{t+1} m / (1 - P_t mu_{t+1}) + (1 - mu_t) g / (1 - P_t);
    var -= lr * m_hat / (sqrt(v / (1 - b2^t)) + eps), with P_t the product of mu_1..mu_t.
    """
    check_update("KerasApplyNadam", grad, var)
    t = float(step) + 1.0
    mu_t, mu_next = _momentum(beta_1, exponent, t), _momentum(beta_1, exponent, t + 1.0)
    prod = float(product)
    new_m, new_v = adam_moments(grad, m, v, beta_1, beta_2)
    m_hat = np.multiply(new_m, mu_next / (1.0 - prod * mu_next))
    m_hat += np.multiply(grad, (1.0 - mu_t) / (1.0 - prod))
    denom = np.divide(new_v, 1.0 - beta_2 ** t)
    np.sqrt(denom, out=denom)
    denom += epsilon
    m_hat *= float(lr)
    m_hat /= denom
    new = np.subtract(var._value, m_hat)
    m._value, v._value, var._value = new_m, new_v, new
    return new


class Nadam(Optimizer):
    """Nadam (Dozat 2016) with Keras 2's defaults and ``tf.keras.optimizers.Nadam``'s schedule."""

    _slot_names = ("m", "v")
    _schedule_exponent = 1.0

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Nadam", **kwargs: Any):
        super().__init__(name, learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        with eager_scope():   # float64: the product of hundreds of factors keeps its digits
            self._momentum_product = Variable(np.float64(1.0), trainable=False,
                                              name=f"{name}/momentum_cache")

    def _prepare_step(self, variables: list[Variable]) -> None:
        self._product_now = apply(_advance_product, self._iterations,
                                  product=self._momentum_product, beta_1=self.beta_1,
                                  exponent=self._schedule_exponent)

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        return apply(_apply_nadam, grad, lr, self._iterations, self._product_now, var=var,
                     m=slots["m"], v=slots["v"], beta_1=self.beta_1, beta_2=self.beta_2,
                     epsilon=self.epsilon, exponent=self._schedule_exponent)

    def _extra_variables(self) -> list[tuple[str, Variable]]:
        return [("momentum_cache", self._momentum_product)]

    def _hyper_config(self) -> dict[str, Any]:
        return {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}


class LegacyNadam(Nadam):
    """``tf.keras.optimizers.legacy.Nadam``: the schedule's exponent is ``schedule_decay * t``.

    As in Keras 2, ``schedule_decay`` (default 0.004) takes the place of ``decay``: the learning
    rate itself is not decayed, and the config reports the schedule decay under ``decay``.
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, name: str = "Nadam", **kwargs: Any):
        kwargs.pop("decay", None)
        self._schedule_exponent = float(kwargs.pop("schedule_decay", 0.004))
        super().__init__(learning_rate, beta_1, beta_2, epsilon, name, **kwargs)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["decay"] = self._schedule_exponent
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Optimizer:
        config = dict(config)
        if "decay" in config and "schedule_decay" not in config:
            config["schedule_decay"] = config.pop("decay")
        return super().from_config(config, custom_objects)


LegacyNadam.__name__ = LegacyNadam.__qualname__ = "Nadam"
