"""Noise layers: Gaussian noise added to or multiplied into the inputs while training.

Both draw with the input's run-time shape (``tf.random.normal(tf.shape(x))``), so they work in
``fit``'s traced step, where the batch dimension is unknown. Outside training they are the
identity.
"""

from __future__ import annotations

import math
from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error


class GaussianNoise(Layer):
    """x + N(0, stddev^2) noise in training: a regularizer, and a model of noisy inputs."""

    _passes_mask = True

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if not float(stddev) >= 0:
            raise layer_error(f"GaussianNoise: `stddev` must be >= 0, got {stddev}")
        self.stddev, self.seed = float(stddev), seed

    def call(self, inputs: Any, training: Any = None):
        if not training or self.stddev == 0.0:
            return inputs
        x = tf.convert_to_tensor(inputs)
        return x + tf.random.normal(tf.shape(x), stddev=self.stddev, dtype=x.dtype,
                                    seed=self.seed)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(Layer):
    """x * N(1, rate / (1 - rate)) in training: dropout's mean and variance, without zeros
    (Srivastava et al., 2014)."""

    _passes_mask = True

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise layer_error(f"GaussianDropout: `rate` must be in [0, 1), got {rate}")
        self.rate, self.seed = float(rate), seed

    def call(self, inputs: Any, training: Any = None):
        if not training or self.rate == 0.0:
            return inputs
        x = tf.convert_to_tensor(inputs)
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        return x * tf.random.normal(tf.shape(x), mean=1.0, stddev=stddev, dtype=x.dtype,
                                    seed=self.seed)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
