"""Volumetric layers (channels last, [batch, depth, height, width, channels]): Conv3D,
Conv3DTranspose, MaxPooling3D/AveragePooling3D, GlobalMax/GlobalAveragePooling3D, and
ZeroPadding3D/Cropping3D/UpSampling3D. The convolutions and pools run through ``tf.nn``'s 3-D
ops (``ops/conv3d_ops.py``); weights and configs are Keras's."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.convolutional import Conv2DTranspose, _Conv
from tapeflow.keras.layers.pooling import _GlobalPooling, _Pooling
from tapeflow.keras.layers.utils import layer_error, normalize_tuple, static_shape


class Conv3D(_Conv):
    """3-D convolution. Weights: ``kernel`` [kd, kh, kw, in_channels, filters] and ``bias``
    [filters] (``conv3d/kernel:0``)."""

    rank = 3

    def convolve(self, inputs: Any) -> Any:
        return tf.nn.conv3d(inputs, self.kernel, strides=(1, *self.strides, 1),
                            padding=self.padding, dilations=self.dilation_rate)


class Conv3DTranspose(Conv2DTranspose):
    """Transposed 3-D convolution. Weights as Keras: ``kernel`` [kd, kh, kw, filters,
    in_channels] and ``bias`` [filters]."""

    rank = 3

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1, 1),
                 padding: str = "valid", output_padding: Any = None, **kwargs: Any):
        _Conv.__init__(self, filters, kernel_size, strides=strides, padding=padding, **kwargs)
        self.output_padding = None
        if output_padding is not None:
            self.output_padding = normalize_tuple(output_padding, 3, "output_padding",
                                                  "Conv3DTranspose")
            for pad, stride in zip(self.output_padding, self.strides):
                if not 0 <= pad < stride:
                    raise layer_error(f"Conv3DTranspose: `output_padding` {self.output_padding}"
                                      f" must be non-negative and smaller than the strides "
                                      f"{self.strides}")

    def convolve(self, inputs: Any) -> Any:
        batch, *spatial, _ = static_shape(inputs)
        if None in spatial:
            raise layer_error(f"Conv3DTranspose {self.name!r}: depth, height and width of the "
                              f"inputs must be known, got shape {inputs.shape}")
        out = [batch] + [self.output_length(i, d) for i, d in enumerate(spatial)]
        return tf.nn.conv3d_transpose(inputs, self.kernel, out + [self.filters],
                                      strides=(1, *self.strides, 1), padding=self.padding,
                                      dilations=self.dilation_rate)


class MaxPooling3D(_Pooling):
    """Maximum over each [pd, ph, pw] window."""

    rank = 3

    def call(self, inputs: Any):
        return tf.nn.max_pool3d(inputs, ksize=self.pool_size, strides=self.strides,
                                padding=self.padding)


class AveragePooling3D(_Pooling):
    """Mean over each [pd, ph, pw] window ('same': over the valid entries only)."""

    rank = 3

    def call(self, inputs: Any):
        return tf.nn.avg_pool3d(inputs, ksize=self.pool_size, strides=self.strides,
                                padding=self.padding)


class GlobalAveragePooling3D(_GlobalPooling):
    """Mean over depth, height and width: [b, d, h, w, c] -> [b, c]."""

    rank = 3

    def call(self, inputs: Any):
        return tf.reduce_mean(inputs, axis=self._axes, keepdims=self.keepdims)


class GlobalMaxPooling3D(_GlobalPooling):
    """Maximum over depth, height and width: [b, d, h, w, c] -> [b, c]."""

    rank = 3

    def call(self, inputs: Any):
        return tf.reduce_max(inputs, axis=self._axes, keepdims=self.keepdims)


def _pairs(value: Any, name: str, layer: str) -> tuple[tuple[int, int], ...]:
    """An int, three ints (symmetric), or three (before, after) pairs."""
    if isinstance(value, int):
        value = (value, value, value)
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise layer_error(f"{layer}: `{name}` must be an int, 3 ints or 3 pairs, got {value!r}")
    out = tuple(tuple(normalize_tuple(v, 2, name, layer)) for v in value)
    if min(min(p) for p in out) < 0:
        raise layer_error(f"{layer}: `{name}` must be non-negative, got {value!r}")
    return out  # type: ignore[return-value]


class _Volume(Layer):
    """Checks [batch, depth, height, width, channels] inputs; output shape per axis."""

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 5:
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                              f"[batch, depth, height, width, channels], got {shape}")
        self.built = True

    def _length(self, axis: int, length: int) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement _length")

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, *spatial, c = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([b] + [None if d is None else self._length(i, d)
                                     for i, d in enumerate(spatial)] + [c])


class ZeroPadding3D(_Volume):
    """Zeros around depth, height and width: `padding` an int, 3 ints or 3 (before, after)."""

    def __init__(self, padding: Any = (1, 1, 1), data_format: str | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = _pairs(padding, "padding", "ZeroPadding3D")

    def call(self, inputs: Any):
        return tf.pad(inputs, [[0, 0], *[list(p) for p in self.padding], [0, 0]])

    def _length(self, axis: int, length: int) -> int:
        return length + sum(self.padding[axis])

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding,
                "data_format": "channels_last"}


class Cropping3D(_Volume):
    """Cut `cropping` (an int, 3 ints or 3 (before, after)) off depth, height and width."""

    def __init__(self, cropping: Any = ((1, 1), (1, 1), (1, 1)),
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.cropping = _pairs(cropping, "cropping", "Cropping3D")

    def build(self, input_shape: Any) -> None:
        super().build(input_shape)
        dims = tf.TensorShape(input_shape).as_list()[1:4]
        for d, crop in zip(dims, self.cropping):
            if d is not None and sum(crop) >= d:
                raise layer_error(f"Cropping3D {self.name!r}: cropping {self.cropping} leaves "
                                  f"nothing of inputs of shape {tf.TensorShape(input_shape)}")

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        shape = static_shape(x)
        (a, b), (c, d), (e, f) = self.cropping
        return x[:, a:shape[1] - b, c:shape[2] - d, e:shape[3] - f]

    def _length(self, axis: int, length: int) -> int:
        return length - sum(self.cropping[axis])

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": "channels_last"}


class UpSampling3D(_Volume):
    """Repeat each voxel `size` ([sd, sh, sw]) times along depth, height and width."""

    def __init__(self, size: Any = (2, 2, 2), data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.size = normalize_tuple(size, 3, "size", "UpSampling3D")
        if min(self.size) <= 0:
            raise layer_error(f"UpSampling3D: `size` must be positive, got {size!r}")

    def call(self, inputs: Any):
        x = inputs
        for axis, n in enumerate(self.size, start=1):
            if n > 1:
                x = tf.repeat(x, n, axis=axis)
        return x

    def _length(self, axis: int, length: int) -> int:
        return length * self.size[axis]

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size, "data_format": "channels_last"}


Convolution3D = Conv3D
Convolution3DTranspose = Conv3DTranspose
MaxPool3D = MaxPooling3D
AvgPool3D = AveragePooling3D
GlobalAvgPool3D = GlobalAveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D
