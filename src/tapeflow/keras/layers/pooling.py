"""Pooling layers: windowed max/average and global max/average over the spatial axes.

1-D layers pool [batch, steps, channels] inputs, 2-D layers [batch, height, width, channels];
both share ``_Pooling`` (arguments, input check, output shape) and ``_GlobalPooling``.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.convolutional import conv_output_length
from tapeflow.keras.layers.utils import (
    check_data_format,
    layer_error,
    normalize_padding,
    normalize_tuple,
)

_AXES = {1: "batch, steps, channels", 2: "batch, height, width, channels",
         3: "batch, depth, height, width, channels"}


def _check_rank(layer: Layer, input_shape: Any, rank: int) -> None:
    shape = tf.TensorShape(input_shape)
    if shape.rank != rank + 2:
        raise layer_error(f"{type(layer).__name__} {layer.name!r}: expected inputs of shape "
                         f"[{_AXES[rank]}], got {shape}")


class _Pooling(Layer):
    """Shared arguments of the windowed pools; `strides` defaults to `pool_size`."""

    rank = 2

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        name, n = type(self).__name__, self.rank
        check_data_format(data_format, name)
        self.pool_size = normalize_tuple(pool_size, n, "pool_size", name)
        self.strides = self.pool_size if strides is None else normalize_tuple(
            strides, n, "strides", name)
        self.padding = normalize_padding(padding, name)

    def build(self, input_shape: Any) -> None:
        _check_rank(self, input_shape, self.rank)
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        spatial = [conv_output_length(d, p, self.padding, s)
                   for d, p, s in zip(dims[1:-1], self.pool_size, self.strides)]
        return tf.TensorShape([dims[0], *spatial, dims[-1]])

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding.lower()}


class MaxPooling1D(_Pooling):
    """Maximum over each pool_size window of the steps axis."""

    rank = 1

    def call(self, inputs: Any):
        return tf.nn.max_pool1d(inputs, ksize=self.pool_size[0], strides=self.strides[0],
                                padding=self.padding)


class AveragePooling1D(_Pooling):
    """Mean over each pool_size window of the steps axis ('same': valid entries only)."""

    rank = 1

    def call(self, inputs: Any):
        return tf.nn.avg_pool1d(inputs, ksize=self.pool_size[0], strides=self.strides[0],
                                padding=self.padding)


class MaxPooling2D(_Pooling):
    """Maximum over each pool_size window."""

    def call(self, inputs: Any):
        return tf.nn.max_pool2d(inputs, ksize=self.pool_size, strides=self.strides,
                                padding=self.padding)


class AveragePooling2D(_Pooling):
    """Mean over each pool_size window (with 'same' padding, over the valid entries only)."""

    def call(self, inputs: Any):
        return tf.nn.avg_pool2d(inputs, ksize=self.pool_size, strides=self.strides,
                                padding=self.padding)


class _GlobalPooling(Layer):
    """Reduce every spatial axis; `keepdims` keeps them as size 1."""

    rank = 2

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        check_data_format(data_format, type(self).__name__)
        self.keepdims = keepdims

    @property
    def _axes(self) -> list[int]:
        return list(range(1, self.rank + 1))

    def build(self, input_shape: Any) -> None:
        _check_rank(self, input_shape, self.rank)
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([dims[0]] + [1] * self.rank * self.keepdims + [dims[-1]])

    def get_config(self) -> dict:
        return {**super().get_config(), "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling):
    """Mean over the steps axis: [b, steps, c] -> [b, c]."""

    rank = 1

    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(data_format=data_format, keepdims=keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs: Any, mask: Any = None):
        if mask is None:
            return tf.reduce_mean(inputs, axis=self._axes, keepdims=self.keepdims)
        # masked steps do not count: sum of the kept steps over how many there are
        keep = tf.expand_dims(tf.cast(mask, inputs.dtype), -1)
        total = tf.reduce_sum(inputs * keep, axis=1, keepdims=self.keepdims)
        return total / tf.reduce_sum(keep, axis=1, keepdims=self.keepdims)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None


class GlobalMaxPooling1D(_GlobalPooling):
    """Maximum over the steps axis: [b, steps, c] -> [b, c]."""

    rank = 1

    def call(self, inputs: Any):
        return tf.reduce_max(inputs, axis=self._axes, keepdims=self.keepdims)


class GlobalAveragePooling2D(_GlobalPooling):
    """Mean over height and width: [b, h, w, c] -> [b, c]."""

    def call(self, inputs: Any):
        return tf.reduce_mean(inputs, axis=self._axes, keepdims=self.keepdims)


class GlobalMaxPooling2D(_GlobalPooling):
    """Maximum over height and width: [b, h, w, c] -> [b, c]."""

    def call(self, inputs: Any):
        return tf.reduce_max(inputs, axis=self._axes, keepdims=self.keepdims)


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
