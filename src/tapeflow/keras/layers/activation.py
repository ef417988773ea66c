"""Activation layers with their own arguments: ReLU, LeakyReLU, ELU, Softmax,
ThresholdedReLU and PReLU (a learned negative slope)."""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras import activations, initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error


class ReLU(Layer):
    """max(x, 0) with optional ``max_value`` ceiling, ``negative_slope`` and ``threshold``."""

    _passes_mask = True

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise layer_error(f"ReLU: max_value must be >= 0, got {max_value}")
        if negative_slope < 0:
            raise layer_error(f"ReLU: negative_slope must be >= 0, got {negative_slope}")
        self.max_value = max_value
        self.negative_slope = negative_slope
        self.threshold = threshold

    def call(self, inputs: Any):
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(Layer):
    """x for x > 0, alpha * x otherwise (Keras 2's default alpha is 0.3)."""

    _passes_mask = True

    def __init__(self, alpha: float = 0.3, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs: Any):
        return activations.relu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class ELU(Layer):
    """Exponential linear unit with scale `alpha` for negative inputs."""

    _passes_mask = True

    def __init__(self, alpha: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs: Any):
        return activations.elu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


def large_negative(dtype: Any) -> float:
    """What Keras adds to masked logits: -1e9, or float16's lowest value (-1e9 would be -inf,
    and a row masked everywhere would then be NaN instead of uniform)."""
    return float(np.finfo(np.float16).min) if tf.as_dtype(dtype) == tf.float16 else -1e9


class Softmax(Layer):
    """Softmax along `axis` (an int, or a tuple of axes normalized together).

    ``mask`` (1 = keep, 0 = drop, broadcastable to the inputs) adds a large negative number to
    the dropped logits first, as Keras does: they get ~0 weight, and a row dropped everywhere
    comes out uniform rather than NaN.
    """

    _passes_mask = True

    def __init__(self, axis: int | tuple = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis

    def call(self, inputs: Any, mask: Any = None):
        x = tf.convert_to_tensor(inputs)
        if mask is not None:
            x = x + (1.0 - tf.cast(mask, x.dtype)) * large_negative(x.dtype)
        if isinstance(self.axis, tuple) and len(self.axis) > 1:
            return tf.exp(x - tf.reduce_logsumexp(x, axis=list(self.axis), keepdims=True))
        axis = self.axis[0] if isinstance(self.axis, tuple) else self.axis
        return tf.nn.softmax(x, axis=axis)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class ThresholdedReLU(Layer):
    """x where x > theta, 0 elsewhere (Konda et al., 2014)."""

    _passes_mask = True

    def __init__(self, theta: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        if theta is None or not float(theta) >= 0:
            raise layer_error(f"ThresholdedReLU: `theta` must be a non-negative float, got "
                             f"{theta}")
        self.theta = float(theta)

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        return x * tf.cast(x > self.theta, x.dtype)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "theta": self.theta}


class PReLU(Layer):
    """max(x, 0) + alpha * min(x, 0) with a learned ``alpha`` per input position, shared
    across ``shared_axes`` (e.g. ``shared_axes=[1, 2]``: one slope per channel of an image)."""

    _passes_mask = True

    def __init__(self, alpha_initializer: Any = "zeros", alpha_regularizer: Any = None,
                 alpha_constraint: Any = None, shared_axes: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = alpha_constraint
        if shared_axes is None or isinstance(shared_axes, (list, tuple)):
            self.shared_axes = None if shared_axes is None else [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]

    def build(self, input_shape: Any) -> None:
        dims = tf.TensorShape(input_shape).as_list()[1:]
        for axis in self.shared_axes or []:
            if not 1 <= axis <= len(dims):
                raise layer_error(f"PReLU {self.name!r}: shared axis {axis} is out of range for "
                                 f"inputs of shape {tf.TensorShape(input_shape)}")
            dims[axis - 1] = 1
        if None in dims:
            raise layer_error(f"PReLU {self.name!r}: needs known non-batch dims (or share the "
                             f"unknown ones with shared_axes), got {tf.TensorShape(input_shape)}")
        self.alpha = self.add_weight("alpha", shape=dims, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.built = True

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        return tf.nn.relu(x) - self.alpha * tf.nn.relu(-x)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "shared_axes": self.shared_axes,
                "alpha_initializer": initializers.serialize(self.alpha_initializer)}
