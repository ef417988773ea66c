"""Layers that move, copy or cut values without weights: ZeroPadding2D, Cropping2D,
UpSampling2D (nearest), RepeatVector and Permute. Each is one or two array ops (pad, slice,
repeat, tile, transpose), so gradients come from those ops.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import check_data_format, layer_error, normalize_tuple


def _check_rank(layer: Layer, input_shape: Any, rank: int, axes: str) -> tf.TensorShape:
    shape = tf.TensorShape(input_shape)
    if shape.rank != rank:
        raise layer_error(f"{type(layer).__name__} {layer.name!r}: expected inputs of shape "
                         f"[{axes}], got {shape}")
    return shape


def _edge_pairs(value: Any, name: str, layer: str) -> tuple[tuple[int, int], ...]:
    """Keras's three spellings of (height, width) edge sizes -> ((top, bottom), (left, right))."""
    if isinstance(value, int):
        pairs = ((value, value), (value, value))
    elif isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, int) for v in value):
        pairs = ((value[0], value[0]), (value[1], value[1]))
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        pairs = tuple(normalize_tuple(v, 2, name, layer) for v in value)
    else:
        raise layer_error(f"{layer}: `{name}` must be an int, a tuple of 2 ints or a tuple of "
                         f"2 tuples of 2 ints, got {value!r}")
    if min(min(p) for p in pairs) < 0:
        raise layer_error(f"{layer}: `{name}` must be non-negative, got {value!r}")
    return pairs


def _plus(length: int | None, extra: int) -> int | None:
    return None if length is None else length + extra


class ZeroPadding2D(Layer):
    """Zeros around the height and width of [batch, height, width, channels] inputs."""

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        check_data_format(data_format, "ZeroPadding2D")
        self.padding = _edge_pairs(padding, "padding", "ZeroPadding2D")

    def build(self, input_shape: Any) -> None:
        _check_rank(self, input_shape, 4, "batch, height, width, channels")
        self.built = True

    def call(self, inputs: Any):
        (top, bottom), (left, right) = self.padding
        return tf.pad(inputs, [[0, 0], [top, bottom], [left, right], [0, 0]])

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, h, w, c = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([b, _plus(h, sum(self.padding[0])), _plus(w, sum(self.padding[1])),
                               c])

    def get_config(self) -> dict:
        return {**super().get_config(), "padding": self.padding}


class Cropping2D(Layer):
    """Cut ``((top, bottom), (left, right))`` rows and columns off [b, h, w, c] inputs."""

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        check_data_format(data_format, "Cropping2D")
        self.cropping = _edge_pairs(cropping, "cropping", "Cropping2D")

    def build(self, input_shape: Any) -> None:
        shape = _check_rank(self, input_shape, 4, "batch, height, width, channels")
        for size, pair, axis in zip(shape.as_list()[1:3], self.cropping, ("height", "width")):
            if size is not None and sum(pair) >= size:
                raise layer_error(f"Cropping2D {self.name!r}: cropping {self.cropping} leaves "
                                 f"nothing of the {axis} of inputs of shape {shape}")
        self.built = True

    def call(self, inputs: Any):
        (top, bottom), (left, right) = self.cropping
        return inputs[:, top:-bottom or None, left:-right or None, :]

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, h, w, c = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([b, _plus(h, -sum(self.cropping[0])),
                               _plus(w, -sum(self.cropping[1])), c])

    def get_config(self) -> dict:
        return {**super().get_config(), "cropping": self.cropping}


class UpSampling2D(Layer):
    """Repeat every row `size[0]` times and every column `size[1]` times (nearest neighbour)."""

    def __init__(self, size: Any = (2, 2), data_format: str | None = None,
                 interpolation: str = "nearest", **kwargs: Any):
        super().__init__(**kwargs)
        check_data_format(data_format, "UpSampling2D")
        self.size = normalize_tuple(size, 2, "size", "UpSampling2D")
        if interpolation != "nearest":
            raise layer_error(f"UpSampling2D: interpolation={interpolation!r} is not supported; "
                             "tapeflow has 'nearest' only")
        self.interpolation = interpolation

    def build(self, input_shape: Any) -> None:
        _check_rank(self, input_shape, 4, "batch, height, width, channels")
        self.built = True

    def call(self, inputs: Any):
        return tf.repeat(tf.repeat(inputs, self.size[0], axis=1), self.size[1], axis=2)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, h, w, c = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([b, None if h is None else h * self.size[0],
                               None if w is None else w * self.size[1], c])

    def get_config(self) -> dict:
        return {**super().get_config(), "size": self.size,
                "interpolation": self.interpolation}


class RepeatVector(Layer):
    """[batch, features] -> [batch, n, features]: the same vector at every step (seq2seq)."""

    def __init__(self, n: int, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(n, int) or n < 1:
            raise layer_error(f"RepeatVector: `n` must be a positive int, got {n!r}")
        self.n = n

    def build(self, input_shape: Any) -> None:
        _check_rank(self, input_shape, 2, "batch, features")
        self.built = True

    def call(self, inputs: Any):
        return tf.tile(tf.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        b, f = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([b, self.n, f])

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}


class Permute(Layer):
    """Reorder the non-batch axes: ``dims`` is a permutation of 1..rank-1 (batch stays 0)."""

    def __init__(self, dims: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise layer_error(f"Permute: `dims` must be a permutation of 1..{len(self.dims)} "
                             f"(the batch axis 0 stays first), got {dims!r}")

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != len(self.dims) + 1:
            raise layer_error(f"Permute {self.name!r}: dims {self.dims} reorder "
                             f"{len(self.dims)} axes but inputs of shape {shape} have "
                             f"{(shape.rank or 1) - 1} besides the batch")
        self.built = True

    def call(self, inputs: Any):
        return tf.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([dims[0]] + [dims[d] for d in self.dims])

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": self.dims}

