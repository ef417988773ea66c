"""Convolution layers: Conv1D, Conv2D, Conv1DTranspose, Conv2DTranspose (channels-last, as Keras).

They share one base, ``_Conv``: arguments, weights (``kernel`` then ``bias``), bias add and
activation. Each subclass says only how to convolve and how long its outputs are.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import activations
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.input_spec import InputSpec
from tapeflow.keras.layers.utils import (
    check_data_format,
    layer_error,
    normalize_padding,
    normalize_tuple,
    static_shape,
)
from tapeflow.keras.layers.weights import KernelAndBias


def conv_output_length(length: int | None, window: int, padding: str, stride: int,
                       dilation: int = 1) -> int | None:
    """Spatial output size of a convolution or pooling window along one axis."""
    if length is None:
        return None
    span = (window - 1) * dilation + 1
    if padding in ("SAME", "CAUSAL"):
        return -(-length // stride)
    return max(0, -(-(length - span + 1) // stride))


def deconv_output_length(length: int | None, window: int, padding: str, stride: int,
                         dilation: int = 1, output_padding: int | None = None) -> int | None:
    """Spatial output size of a transposed convolution along one axis (Keras's rule)."""
    if length is None:
        return None
    span = (window - 1) * dilation + 1
    if output_padding is None:
        if padding == "SAME":
            return length * stride
        return length * stride + max(span - stride, 0)
    pad = span // 2 if padding == "SAME" else 0
    return (length - 1) * stride + span - 2 * pad + output_padding


class _Conv(KernelAndBias, Layer):
    """Shared arguments and weights of the convolutions over `rank` spatial axes."""

    rank = 2
    paddings: tuple[str, ...] = ("same", "valid")

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = 1, groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None, **kwargs: Any):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        name, n = type(self).__name__, self.rank
        if int(filters) <= 0:
            raise layer_error(f"{name}: `filters` must be a positive integer, got {filters}")
        if groups != 1:
            raise layer_error(f"{name}: grouped convolution (groups != 1) is not supported")
        check_data_format(data_format, name)
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, n, "kernel_size", name)
        self.strides = normalize_tuple(strides, n, "strides", name)
        self.padding = normalize_padding(padding, name, self.paddings)
        self.dilation_rate = normalize_tuple(dilation_rate, n, "dilation_rate", name)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise layer_error(f"{name}: strides {self.strides} > 1 are not compatible with "
                             f"dilation_rate {self.dilation_rate} > 1")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self._weight_arguments(kernel_initializer, bias_initializer, kernel_regularizer,
                               bias_regularizer, kernel_constraint, bias_constraint)
        self.input_spec = self._spec()

    def _spec(self, axes: dict | None = None) -> InputSpec:
        """tf-keras 2.21's spec (transposed convolutions too): at least rank + 2 dims, and
        once built the channels it was built for."""
        return InputSpec(min_ndim=self.rank + 2, axes=axes)

    def _kernel_shape(self, in_channels: int) -> tuple[int, ...]:
        return self.kernel_size + (in_channels, self.filters)

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != self.rank + 2 or shape[-1] is None:
            axes = {1: ["batch", "steps"], 2: ["batch", "height", "width"],
                    3: ["batch", "depth", "height", "width"]}[self.rank]
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                             f"[{', '.join(axes)}, channels] with known channels, got {shape}")
        self._add_kernel_and_bias(self._kernel_shape(int(shape[-1])),
                                  (self.filters,) if self.use_bias else None)
        self.input_spec = self._spec({-1: int(shape[-1])})
        self.built = True

    def convolve(self, inputs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement convolve(inputs)")

    def output_length(self, axis: int, length: int | None) -> int | None:
        """Output size along spatial `axis` for an input of size `length`."""
        return conv_output_length(length, self.kernel_size[axis], self.padding,
                                  self.strides[axis], self.dilation_rate[axis])

    def call(self, inputs: Any):
        out = self.convolve(tf.convert_to_tensor(inputs))
        if self.use_bias:
            out = tf.nn.bias_add(out, self.bias)  # its gradient is one fused channel sum
        return self.activation(out)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        spatial = [self.output_length(i, d) for i, d in enumerate(dims[1:-1])]
        return tf.TensorShape([dims[0], *spatial, self.filters])

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding.lower(), "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias}


class Conv1D(_Conv):
    """1-D convolution over [batch, steps, channels] inputs (temporal convolution).

    Weights: ``kernel`` [k, in_channels, filters] and ``bias`` [filters], named
    ``conv1d/kernel:0`` and ``conv1d/bias:0``. ``padding='causal'`` pads (k - 1) * dilation
    zeros at the start only, so output t never sees inputs after t (WaveNet-style).
    """

    rank = 1
    paddings = ("same", "valid", "causal")

    def convolve(self, inputs: Any) -> Any:
        padding = self.padding
        if padding == "CAUSAL":
            left = (self.kernel_size[0] - 1) * self.dilation_rate[0]
            inputs = tf.pad(inputs, [[0, 0], [left, 0], [0, 0]])
            padding = "VALID"
        return tf.nn.conv1d(inputs, self.kernel, stride=self.strides[0], padding=padding,
                            dilations=self.dilation_rate[0])


class Conv2D(_Conv):
    """2-D convolution over [batch, height, width, channels] inputs.

    Weights: ``kernel`` [kh, kw, in_channels, filters] and ``bias`` [filters], named
    ``conv2d/kernel:0`` and ``conv2d/bias:0``. Strides and dilation cannot both exceed 1, as in
    Keras.
    """

    def convolve(self, inputs: Any) -> Any:
        return tf.nn.conv2d(inputs, self.kernel, strides=self.strides, padding=self.padding,
                            dilations=self.dilation_rate)


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution (the adjoint of Conv2D), e.g. to upsample in a decoder.

    Weights as Keras: ``kernel`` [kh, kw, filters, in_channels] (output channels before input
    ones, the layout of Conv2D's input gradient) and ``bias`` [filters]. Output size per axis:
    ``in * stride`` ('same') or ``in * stride + max(k - stride, 0)`` ('valid'); with
    ``output_padding`` it is ``(in - 1) * stride + k - 2 * pad + output_padding``.
    """

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", output_padding: Any = None, **kwargs: Any):
        super().__init__(filters, kernel_size, strides=strides, padding=padding, **kwargs)
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = normalize_tuple(output_padding, 2, "output_padding",
                                                  "Conv2DTranspose")
            for pad, stride in zip(self.output_padding, self.strides):
                if not 0 <= pad < stride:
                    raise layer_error(f"Conv2DTranspose: `output_padding` {self.output_padding} "
                                     f"must be non-negative and smaller than the strides "
                                     f"{self.strides}")

    def _kernel_shape(self, in_channels: int) -> tuple[int, ...]:
        return self.kernel_size + (self.filters, in_channels)

    def output_length(self, axis: int, length: int | None) -> int | None:
        extra = None if self.output_padding is None else self.output_padding[axis]
        return deconv_output_length(length, self.kernel_size[axis], self.padding,
                                    self.strides[axis], self.dilation_rate[axis], extra)

    def convolve(self, inputs: Any) -> Any:
        batch, h, w, _ = static_shape(inputs)
        if h is None or w is None:
            raise layer_error(f"Conv2DTranspose {self.name!r}: the height and width of the "
                             f"inputs must be known, got shape {inputs.shape}")
        out_shape = [batch, self.output_length(0, h), self.output_length(1, w), self.filters]
        return tf.nn.conv2d_transpose(inputs, self.kernel, out_shape, strides=self.strides,
                                      padding=self.padding, dilations=self.dilation_rate)

    def get_config(self) -> dict:
        return {**super().get_config(), "output_padding": self.output_padding}


class Conv1DTranspose(Conv2DTranspose):
    """Transposed 1-D convolution over [batch, steps, channels], run as a height-1
    Conv2DTranspose. Weights as Keras: ``kernel`` [k, filters, in_channels], ``bias``
    [filters]."""

    rank = 1

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", output_padding: Any = None, **kwargs: Any):
        _Conv.__init__(self, filters, kernel_size, strides=strides, padding=padding, **kwargs)
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = normalize_tuple(output_padding, 1, "output_padding",
                                                  "Conv1DTranspose")
            if not 0 <= self.output_padding[0] < self.strides[0]:
                raise layer_error(f"Conv1DTranspose: `output_padding` {self.output_padding} "
                                 f"must be non-negative and smaller than the strides "
                                 f"{self.strides}")

    def convolve(self, inputs: Any) -> Any:
        batch, steps, _ = static_shape(inputs)
        if steps is None:
            raise layer_error(f"Conv1DTranspose {self.name!r}: the number of steps of the "
                             f"inputs must be known, got shape {inputs.shape}")
        out_shape = [batch, 1, self.output_length(0, steps), self.filters]
        out = tf.nn.conv2d_transpose(tf.expand_dims(inputs, 1), tf.expand_dims(self.kernel, 0),
                                     out_shape, strides=(1,) + self.strides,
                                     padding=self.padding, dilations=(1,) + self.dilation_rate)
        return tf.squeeze(out, 1)


Convolution1D = Conv1D
Convolution1DTranspose = Conv1DTranspose
Convolution2D = Conv2D
Convolution2DTranspose = Conv2DTranspose
