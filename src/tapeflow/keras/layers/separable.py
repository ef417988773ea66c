"""Depthwise and separable convolutions: DepthwiseConv1D/2D and SeparableConv1D/2D.

The depthwise step is written in existing tapeflow ops (pad, strided slices, multiply, add):
one shifted slice of the input per kernel tap, times that tap's [channels, multiplier] weights.
That costs kh * kw elementwise passes, the same arithmetic as a depthwise kernel, and its
gradients come from those ops, so no new primitive is needed. The pointwise step of the
separable layers is a 1x1 ``tf.nn.conv2d``. Channels-last only, as every tapeflow conv.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import activations, initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.convolutional import conv_output_length
from tapeflow.keras.layers.utils import (
    check_data_format,
    layer_error,
    normalize_padding,
    normalize_tuple,
)


def _same_pads(length: int, window: int, stride: int, dilation: int) -> tuple[int, int]:
    """TensorFlow's SAME padding: the extra cell, if any, goes after."""
    span = (window - 1) * dilation + 1
    out = -(-length // stride)
    total = max((out - 1) * stride + span - length, 0)
    return total // 2, total - total // 2


def depthwise_conv2d(x: Any, kernel: Any, strides: tuple[int, int], padding: str,
                     dilations: tuple[int, int]) -> Any:
    """[b, h, w, c] inputs, [kh, kw, c, m] kernel -> [b, h', w', c * m]; output channel
    ``k * m + q`` is input channel k filtered by ``kernel[..., k, q]`` (TensorFlow's order)."""
    _, h, w, c = x.shape.as_list()
    kh, kw, kc, m = kernel.shape.as_list()
    if h is None or w is None or c != kc:
        raise layer_error(f"depthwise_conv2d: inputs need known height, width and {kc} "
                         f"channels for a kernel of shape {kernel.shape}, got {x.shape}")
    if padding == "SAME":
        (t, b_), (left, r) = (_same_pads(h, kh, strides[0], dilations[0]),
                              _same_pads(w, kw, strides[1], dilations[1]))
        x = tf.pad(x, [[0, 0], [t, b_], [left, r], [0, 0]])
        h, w = h + t + b_, w + left + r
    ho = conv_output_length(h, kh, "VALID", strides[0], dilations[0])
    wo = conv_output_length(w, kw, "VALID", strides[1], dilations[1])
    if not ho or not wo:
        raise layer_error(f"depthwise_conv2d: a {kh}x{kw} kernel (dilation {dilations}) does "
                         f"not fit inputs of shape {x.shape} with padding 'valid'")
    x = tf.expand_dims(x, -1)
    out = None
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dilations[0], j * dilations[1]
            window = x[:, r0:r0 + (ho - 1) * strides[0] + 1:strides[0],
                       c0:c0 + (wo - 1) * strides[1] + 1:strides[1]]
            term = window * kernel[i, j]
            out = term if out is None else out + term
    return tf.reshape(out, [-1, ho, wo, c * m])


class _DepthwiseBase(Layer):
    """Arguments and the depthwise kernel shared by the three layers (``rank`` spatial axes)."""

    rank = 2

    def __init__(self, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 depth_multiplier: int = 1, data_format: str | None = None,
                 dilation_rate: Any = 1, activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, depthwise_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name, n = type(self).__name__, self.rank
        check_data_format(data_format, name)
        if int(depth_multiplier) <= 0:
            raise layer_error(f"{name}: `depth_multiplier` must be a positive integer, got "
                             f"{depth_multiplier}")
        self.kernel_size = normalize_tuple(kernel_size, n, "kernel_size", name)
        self.strides = normalize_tuple(strides, n, "strides", name)
        self.padding = normalize_padding(padding, name)
        self.dilation_rate = normalize_tuple(dilation_rate, n, "dilation_rate", name)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise layer_error(f"{name}: strides {self.strides} > 1 are not compatible with "
                             f"dilation_rate {self.dilation_rate} > 1")
        self.depth_multiplier = int(depth_multiplier)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.depthwise_constraint = depthwise_constraint
        self.bias_constraint = bias_constraint

    def _channels(self, input_shape: Any) -> int:
        shape = tf.TensorShape(input_shape)
        if shape.rank != self.rank + 2 or shape[-1] is None:
            axes = "batch, steps" if self.rank == 1 else "batch, height, width"
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                             f"[{axes}, channels] with known channels, got {shape}")
        return int(shape[-1])

    def _add_depthwise(self, channels: int) -> None:
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)

    def _add_bias(self, size: int) -> None:
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=(size,), initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)

    def _depthwise(self, x: Any) -> Any:
        """The depthwise step -> [b, h', w', c * m]; 1-D inputs run as a height-1 image."""
        kernel = self.depthwise_kernel
        if self.rank == 1:
            x, kernel = tf.expand_dims(x, 1), tf.expand_dims(kernel, 0)
            return depthwise_conv2d(x, kernel, (1,) + self.strides, self.padding,
                                    (1,) + self.dilation_rate)
        return depthwise_conv2d(x, kernel, self.strides, self.padding, self.dilation_rate)

    def _finish(self, out: Any) -> Any:
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)
        return self.activation(out)

    def _spatial(self, input_shape: Any) -> list:
        dims = tf.TensorShape(input_shape).as_list()
        return [dims[0]] + [conv_output_length(d, k, self.padding, s, r) for d, k, s, r in
                            zip(dims[1:-1], self.kernel_size, self.strides, self.dilation_rate)]

    def get_config(self) -> dict:
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding.lower(),
                "depth_multiplier": self.depth_multiplier, "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class DepthwiseConv2D(_DepthwiseBase):
    """Each input channel filtered on its own by ``depth_multiplier`` kernels (MobileNet).

    Weights as Keras: ``depthwise_kernel`` [kh, kw, channels, depth_multiplier] and ``bias``
    [channels * depth_multiplier].
    """

    def build(self, input_shape: Any) -> None:
        channels = self._channels(input_shape)
        self._add_depthwise(channels)
        self._add_bias(channels * self.depth_multiplier)
        self.built = True

    def call(self, inputs: Any):
        out = self._depthwise(tf.convert_to_tensor(inputs))
        return self._finish(tf.squeeze(out, 1) if self.rank == 1 else out)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        c = tf.TensorShape(input_shape).as_list()[-1]
        return tf.TensorShape(self._spatial(input_shape)
                              + [None if c is None else c * self.depth_multiplier])


class _Separable(_DepthwiseBase):
    """Depthwise step, then a 1x1 convolution to ``filters`` channels (Xception)."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = 1, depth_multiplier: int = 1,
                 pointwise_initializer: Any = "glorot_uniform",
                 pointwise_regularizer: Any = None, pointwise_constraint: Any = None,
                 **kwargs: Any):
        super().__init__(kernel_size, strides=strides, padding=padding,
                         depth_multiplier=depth_multiplier, data_format=data_format,
                         dilation_rate=dilation_rate, **kwargs)
        if int(filters) <= 0:
            raise layer_error(f"{type(self).__name__}: `filters` must be a positive integer, "
                             f"got {filters}")
        self.filters = int(filters)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = pointwise_constraint

    def build(self, input_shape: Any) -> None:
        channels = self._channels(input_shape)
        self._add_depthwise(channels)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel",
            shape=(1,) * self.rank + (channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._add_bias(self.filters)
        self.built = True

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        out = self._depthwise(x)
        pointwise = self.pointwise_kernel
        if self.rank == 1:
            pointwise = tf.expand_dims(pointwise, 0)
        out = tf.nn.conv2d(out, pointwise, strides=1, padding="VALID")
        if self.rank == 1:
            out = tf.squeeze(out, 1)
        return self._finish(out)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(self._spatial(input_shape) + [self.filters])

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer)}


class SeparableConv2D(_Separable):
    """Weights as Keras: ``depthwise_kernel`` [kh, kw, c, m], ``pointwise_kernel``
    [1, 1, c * m, filters], ``bias`` [filters]."""


class SeparableConv1D(_Separable):
    """Weights as Keras: ``depthwise_kernel`` [k, c, m], ``pointwise_kernel``
    [1, c * m, filters], ``bias`` [filters]."""

    rank = 1


class DepthwiseConv1D(DepthwiseConv2D):
    """Weights as Keras: ``depthwise_kernel`` [k, channels, depth_multiplier], ``bias``
    [channels * depth_multiplier]."""

    rank = 1


SeparableConvolution1D = SeparableConv1D
SeparableConvolution2D = SeparableConv2D
