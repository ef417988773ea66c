"""Convolution layers: Conv2D (NHWC inputs, HWIO kernels, as Keras)."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import activations, initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import (
    check_data_format,
    layer_error,
    normalize_padding,
    normalize_tuple,
)


def conv_output_length(length: int | None, window: int, padding: str, stride: int,
                       dilation: int = 1) -> int | None:
    """Spatial output size of a convolution or pooling window along one axis."""
    if length is None:
        return None
    span = (window - 1) * dilation + 1
    if padding == "SAME":
        return -(-length // stride)
    return max(0, -(-(length - span + 1) // stride))


class Conv2D(Layer):
    """2-D convolution over [batch, height, width, channels] inputs.

    Weights: ``kernel`` [kh, kw, in_channels, filters] and ``bias`` [filters], named
    ``conv2d/kernel:0`` and ``conv2d/bias:0``. Strides and dilation cannot both exceed 1, as in
    Keras.
    """

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = (1, 1), groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None, **kwargs: Any):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name = "Conv2D"
        if int(filters) <= 0:
            raise layer_error(f"Conv2D: `filters` must be a positive integer, got {filters}")
        if groups != 1:
            raise layer_error("Conv2D: grouped convolution (groups != 1) is not supported")
        check_data_format(data_format, name)
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size", name)
        self.strides = normalize_tuple(strides, 2, "strides", name)
        self.padding = normalize_padding(padding, name)
        self.dilation_rate = normalize_tuple(dilation_rate, 2, "dilation_rate", name)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise layer_error(f"Conv2D: strides {self.strides} > 1 are not compatible with "
                             f"dilation_rate {self.dilation_rate} > 1")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 4 or shape[-1] is None:
            raise layer_error(f"Conv2D {self.name!r}: expected inputs of shape [batch, height, "
                             f"width, channels] with known channels, got {shape}")
        in_channels = int(shape[-1])
        self.kernel = self.add_weight("kernel", shape=self.kernel_size + (in_channels,
                                                                         self.filters),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=(self.filters,),
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs: Any):
        out = tf.nn.conv2d(inputs, self.kernel, strides=self.strides, padding=self.padding,
                           dilations=self.dilation_rate)
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)  # its gradient is one fused channel sum
        return self.activation(out)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, h, w, _ = tf.TensorShape(input_shape).as_list()
        (kh, kw), (sh, sw), (dh, dw) = self.kernel_size, self.strides, self.dilation_rate
        return tf.TensorShape([b, conv_output_length(h, kh, self.padding, sh, dh),
                               conv_output_length(w, kw, self.padding, sw, dw), self.filters])

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding.lower(), "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias}


Convolution2D = Conv2D
