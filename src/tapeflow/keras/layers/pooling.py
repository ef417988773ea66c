"""Pooling layers: windowed max/average and global max/average over the spatial axes."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.convolutional import conv_output_length
from tapeflow.keras.layers.utils import check_data_format, normalize_padding, normalize_tuple


class _Pooling2D(Layer):
    """Shared arguments of the windowed 2-D pools; `strides` defaults to `pool_size`."""

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        name = type(self).__name__
        check_data_format(data_format, name)
        self.pool_size = normalize_tuple(pool_size, 2, "pool_size", name)
        self.strides = self.pool_size if strides is None else normalize_tuple(
            strides, 2, "strides", name)
        self.padding = normalize_padding(padding, name)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, h, w, c = tf.TensorShape(input_shape).as_list()
        (ph, pw), (sh, sw) = self.pool_size, self.strides
        return tf.TensorShape([b, conv_output_length(h, ph, self.padding, sh),
                               conv_output_length(w, pw, self.padding, sw), c])

    def get_config(self) -> dict:
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding.lower()}


class MaxPooling2D(_Pooling2D):
    """Maximum over each pool_size window."""

    def call(self, inputs: Any):
        return tf.nn.max_pool2d(inputs, ksize=self.pool_size, strides=self.strides,
                                padding=self.padding)


class AveragePooling2D(_Pooling2D):
    """Mean over each pool_size window (with 'same' padding, over the valid entries only)."""

    def call(self, inputs: Any):
        return tf.nn.avg_pool2d(inputs, ksize=self.pool_size, strides=self.strides,
                                padding=self.padding)


class _GlobalPooling2D(Layer):
    def __init__(self, data_format: str | None = None, keepdims: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        check_data_format(data_format, type(self).__name__)
        self.keepdims = keepdims

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, _, _, c = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([b, 1, 1, c] if self.keepdims else [b, c])

    def get_config(self) -> dict:
        return {**super().get_config(), "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPooling2D):
    """Mean over height and width: [b, h, w, c] -> [b, c]."""

    def call(self, inputs: Any):
        return tf.reduce_mean(inputs, axis=[1, 2], keepdims=self.keepdims)


class GlobalMaxPooling2D(_GlobalPooling2D):
    """Maximum over height and width: [b, h, w, c] -> [b, c]."""

    def call(self, inputs: Any):
        return tf.reduce_max(inputs, axis=[1, 2], keepdims=self.keepdims)


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
