"""Adafactor (Shazeer & Stern 2018), as tf-keras 2.21: second moments kept factored for
matrices (a row mean ``r`` and a column mean ``c`` instead of a full ``v``), a step size
relative to the weight's RMS, and update clipping by RMS.

For a variable W (rank >= 2) at step t (1-based), with g the gradient:
``beta = 1 - t ** beta_2_decay``, ``rho = min(lr, 1 / sqrt(t))``,
``alpha = max(epsilon_2, rms(W)) * rho``; ``g2 = g**2 + epsilon_1``;
``r = beta r + (1 - beta) mean(g2, -1)``, ``c = beta c + (1 - beta) mean(g2, -2)``,
``v = (r / mean(r, -1))[..., None] * c[..., None, :]`` (rank < 2: ``v = beta v + (1 - beta)
g2``); ``u = g / sqrt(v)``, ``W -= alpha * u / max(1, rms(u) / clip_threshold)``.
(``relative_step`` is kept for configs: tf-keras's rule takes ``min(lr, 1 / sqrt(t))`` either
way.) Written in tapeflow ops, so a traced training step holds the whole update.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.optimizer import Optimizer


def _rms(x: Any) -> Any:
    return tf.sqrt(tf.reduce_mean(tf.square(x)))


class Adafactor(Optimizer):
    """Memory-light adaptive optimizer: O(rows + cols) second-moment state per matrix."""

    _slot_names = ("r", "c", "v")

    def __init__(self, learning_rate: Any = 0.001, beta_2_decay: float = -0.8,
                 epsilon_1: float = 1e-30, epsilon_2: float = 1e-3,
                 clip_threshold: float = 1.0, relative_step: bool = True,
                 name: str = "Adafactor", **kwargs: Any):
        super().__init__(name, learning_rate, **kwargs)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1 = float(epsilon_1)
        self.epsilon_2 = float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = bool(relative_step)

    def _create_slots(self, var: Variable) -> dict[str, Variable]:
        """r [shape[:-1]] and c [shape[:-2] + shape[-1:]] for a matrix, then v like `var`."""
        shape = var.shape.as_tuple()
        if len(shape) >= 2:
            for slot_name, slot_shape in (("r", shape[:-1]), ("c", shape[:-2] + shape[-1:])):
                self.add_slot(var, slot_name, _zeros_of(slot_shape))
        self.add_slot(var, "v", 0.0)
        return self._slots[var._unique_id][1]

    def _update(self, grad: Any, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        dtype = var.dtype
        step = tf.cast(self._iterations + 1, dtype)
        rho = tf.minimum(tf.cast(lr, dtype), tf.math.rsqrt(step))
        alpha = tf.maximum(tf.constant(self.epsilon_2, dtype), _rms(var)) * rho
        grad_square = tf.square(grad) + self.epsilon_1
        beta = 1.0 - tf.pow(step, tf.constant(self.beta_2_decay, dtype))
        v = slots["v"]
        if "r" in slots:
            r = slots["r"].assign(beta * slots["r"] + (1.0 - beta)
                                  * tf.reduce_mean(grad_square, axis=-1))
            c = slots["c"].assign(beta * slots["c"] + (1.0 - beta)
                                  * tf.reduce_mean(grad_square, axis=-2))
            v = v.assign(tf.expand_dims(r / tf.reduce_mean(r, axis=-1, keepdims=True), -1)
                         * tf.expand_dims(c, -2))
        else:
            v = v.assign(beta * v + (1.0 - beta) * grad_square)
        u = grad * tf.math.rsqrt(v)
        u_hat = u / tf.maximum(tf.constant(1.0, dtype), _rms(u) / self.clip_threshold)
        return var.assign_sub(alpha * u_hat)

    def _hyper_config(self) -> dict[str, Any]:
        return {"beta_2_decay": self.beta_2_decay, "epsilon_1": self.epsilon_1,
                "epsilon_2": self.epsilon_2, "clip_threshold": self.clip_threshold,
                "relative_step": self.relative_step}


def _zeros_of(slot_shape: tuple) -> Any:
    """An initializer for ``add_slot`` giving zeros of `slot_shape` (not the variable's)."""
    def initializer(shape: Any = None, dtype: Any = None) -> np.ndarray:
        return np.zeros(slot_shape, dtype=dtype._np)

    return initializer
