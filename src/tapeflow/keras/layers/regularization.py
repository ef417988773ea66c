"""Regularization layers with no weights: ActivityRegularization (a loss on the activations)
and AlphaDropout (dropout that keeps SELU's self-normalizing mean and variance)."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error

# SELU's constants (Klambauer et al., 2017): dropped units go to SELU's negative saturation.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class ActivityRegularization(Layer):
    """The identity, adding ``l1 * sum|x| + l2 * sum x^2`` (per sample) to the layer's losses."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any):
        kwargs.pop("activity_regularizer", None)
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = float(l1), float(l2)
        self.supports_masking = True

    def call(self, inputs: Any):
        return inputs

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}


class AlphaDropout(Layer):
    """In training, set a `rate` fraction of inputs to SELU's saturation value and rescale
    so the mean and variance stay those of the inputs; the identity otherwise."""

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise layer_error(f"AlphaDropout: `rate` must be in [0, 1), got {rate}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed
        self.supports_masking = True

    def call(self, inputs: Any, training: Any = None):
        if not training or self.rate == 0.0:
            return inputs
        x = tf.convert_to_tensor(inputs)
        shape = tf.shape(x) if self.noise_shape is None else self.noise_shape
        kept = tf.cast(tf.random.uniform(shape, seed=self.seed) >= self.rate, x.dtype)
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        a = ((1.0 - self.rate) * (1.0 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        return a * (x * kept + alpha_p * (1.0 - kept)) + b

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


