"""The 1-D layers that move or cut steps of [batch, steps, features] inputs: ZeroPadding1D,
Cropping1D, UpSampling1D. Each is one array op (pad, slice, repeat)."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error, normalize_tuple


def _pair(value: Any, name: str, layer: str) -> tuple[int, int]:
    pair = normalize_tuple(value, 2, name, layer)
    if min(pair) < 0:
        raise layer_error(f"{layer}: `{name}` must be non-negative, got {value!r}")
    return pair


class _Steps(Layer):
    """Checks [batch, steps, features] inputs."""

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 3:
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                             f"[batch, steps, features], got {shape}")
        self.built = True

    def _steps(self, steps: int) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement _steps")

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, steps, f = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([b, None if steps is None else self._steps(steps), f])


class ZeroPadding1D(_Steps):
    """`padding` zero steps at the start and end (an int, or (start, end))."""

    def __init__(self, padding: Any = 1, **kwargs: Any):
        super().__init__(**kwargs)
        self.padding = _pair(padding, "padding", "ZeroPadding1D")

    def call(self, inputs: Any):
        return tf.pad(inputs, [[0, 0], list(self.padding), [0, 0]])

    def _steps(self, steps: int) -> int:
        return steps + sum(self.padding)

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding}


class Cropping1D(_Steps):
    """Cut `cropping` steps off the start and end (an int, or (start, end))."""

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any):
        super().__init__(**kwargs)
        self.cropping = _pair(cropping, "cropping", "Cropping1D")

    def build(self, input_shape: Any) -> None:
        super().build(input_shape)
        steps = tf.TensorShape(input_shape)[1]
        if steps is not None and sum(self.cropping) >= steps:
            raise layer_error(f"Cropping1D {self.name!r}: cropping {self.cropping} leaves no "
                             f"steps of inputs of shape {tf.TensorShape(input_shape)}")

    def call(self, inputs: Any):
        start, end = self.cropping
        x = tf.convert_to_tensor(inputs)
        return x[:, start:x.shape[1] - end] if end else x[:, start:]

    def _steps(self, steps: int) -> int:
        return steps - sum(self.cropping)

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping}


class UpSampling1D(_Steps):
    """Repeat each step `size` times along the steps axis."""

    def __init__(self, size: int = 2, **kwargs: Any):
        super().__init__(**kwargs)
        if int(size) <= 0:
            raise layer_error(f"UpSampling1D: `size` must be a positive integer, got {size}")
        self.size = int(size)

    def call(self, inputs: Any):
        return tf.repeat(inputs, self.size, axis=1)

    def _steps(self, steps: int) -> int:
        return steps * self.size

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size}
