"""Per-sample normalizations with no batch statistics: UnitNormalization (each vector scaled to
unit L2 norm) and GroupNormalization (Wu & He, 2018: channels split into groups, each group
normalized over its channels and all spatial positions of one sample)."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error


class UnitNormalization(Layer):
    """x / max(||x||_2, 1e-6) along `axis` (an int or a list of ints), as Keras."""

    def __init__(self, axis: Any = -1, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise layer_error(f"UnitNormalization: `axis` must be an int or a list of ints, got "
                             f"{axis!r}")
        self.supports_masking = True

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        return tf.nn.l2_normalize(x, axis=self.axis, epsilon=1e-12)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class GroupNormalization(Layer):
    """Normalize each of `groups` channel groups per sample; ``groups=1`` is LayerNorm over all
    non-batch axes, ``groups=channels`` is InstanceNorm. Weights as Keras: ``gamma`` and
    ``beta`` of shape [channels]. Channels must be the last axis (``axis=-1``)."""

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        if int(groups) <= 0:
            raise layer_error(f"GroupNormalization: `groups` must be positive, got {groups}")
        self.groups, self.axis, self.epsilon = int(groups), int(axis), float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        rank = shape.rank
        if rank is None or rank < 2 or self.axis not in (-1, rank - 1):
            raise layer_error(f"GroupNormalization {self.name!r}: supports channels on the last "
                             f"axis (axis=-1) of inputs of rank >= 2, got axis={self.axis} and "
                             f"shape {shape}")
        channels = shape[-1]
        if channels is None or channels % self.groups:
            raise layer_error(f"GroupNormalization {self.name!r}: the {channels} channels must "
                             f"be known and divisible by groups={self.groups}")
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight("gamma", shape=(channels,),
                                         initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", shape=(channels,),
                                        initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.built = True

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        rank, channels = x.shape.rank, x.shape[-1]
        grouped = tf.reshape(x, tf.concat([tf.shape(x)[:-1],
                                           [self.groups, channels // self.groups]], 0))
        axes = list(range(1, rank - 1)) + [rank]
        mean, variance = tf.nn.moments(grouped, axes=axes, keepdims=True)
        out = tf.reshape((grouped - mean) * tf.math.rsqrt(variance + self.epsilon), tf.shape(x))
        if self.gamma is not None:
            out = out * self.gamma
        if self.beta is not None:
            out = out + self.beta
        return out

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer)}
