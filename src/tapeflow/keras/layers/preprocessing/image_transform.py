"""Geometric augmentation: RandomRotation, RandomZoom, RandomTranslation, and Keras's
``transform`` / ``get_*_matrix`` helpers they share.

Each layer draws one transform per image (training only; inference is the identity, as in
Keras) and resamples through ``tf.raw_ops.ImageProjectiveTransformV3`` with Keras's
``fill_mode`` ('reflect', 'wrap', 'constant', 'nearest') and ``interpolation`` ('bilinear',
'nearest'). Draws use ``tf.random.uniform`` with the layer's seed, so they trace in
``tf.function`` and ``Dataset.map``.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.preprocessing.image import _images
from tapeflow.keras.layers.utils import layer_error

_FILL_MODES = ("reflect", "wrap", "constant", "nearest")
_INTERPOLATIONS = ("bilinear", "nearest")


def transform(images: Any, transforms: Any, fill_mode: str = "reflect",
              fill_value: float = 0.0, interpolation: str = "bilinear",
              output_shape: Any = None, name: str | None = None) -> Any:
    """Resample [batch, h, w, c] `images` through [batch or 1, 8] projective `transforms`
    (output point -> input point), Keras's ``image_preprocessing.transform``."""
    images = tf.convert_to_tensor(images)
    if output_shape is None:
        output_shape = images.shape.as_list()[1:3]
    return tf.raw_ops.ImageProjectiveTransformV3(
        images=images, transforms=transforms, output_shape=output_shape,
        fill_value=fill_value, interpolation=interpolation.upper(),
        fill_mode=fill_mode.upper())


def get_rotation_matrix(angles: Any, image_height: Any, image_width: Any,
                        name: str | None = None) -> Any:
    """[n, 8] transforms rotating each image by `angles` (radians, counter-clockwise) about
    its centre."""
    angles = tf.convert_to_tensor(angles, tf.float32)
    h, w = tf.cast(image_height, tf.float32), tf.cast(image_width, tf.float32)
    cos, sin = tf.cos(angles), tf.sin(angles)
    x_offset = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
    y_offset = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
    zeros = tf.zeros_like(angles)
    return tf.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


def get_translation_matrix(translations: Any, name: str | None = None) -> Any:
    """[n, 8] transforms shifting each image by [dx, dy] pixels."""
    t = tf.convert_to_tensor(translations, tf.float32)
    ones, zeros = tf.ones_like(t[:, 0]), tf.zeros_like(t[:, 0])
    return tf.stack([ones, zeros, -t[:, 0], zeros, ones, -t[:, 1], zeros, zeros], axis=1)


def get_zoom_matrix(zooms: Any, image_height: Any, image_width: Any,
                    name: str | None = None) -> Any:
    """[n, 8] transforms zooming each image by [zx, zy] about its centre (> 1 zooms out)."""
    z = tf.convert_to_tensor(zooms, tf.float32)
    h, w = tf.cast(image_height, tf.float32), tf.cast(image_width, tf.float32)
    x_offset = ((w - 1.0) / 2.0) * (1.0 - z[:, 0])
    y_offset = ((h - 1.0) / 2.0) * (1.0 - z[:, 1])
    zeros = tf.zeros_like(z[:, 0])
    return tf.stack([z[:, 0], zeros, x_offset, zeros, z[:, 1], y_offset, zeros, zeros], axis=1)


def _range(layer: str, arg: str, factor: Any, bound: float | None = None) -> tuple:
    """A factor f means [-f, f]; a pair (a, b) means [a, b] (Keras's checks)."""
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2:
            raise layer_error(f"{layer}: `{arg}` must be a float or a pair, got {factor!r}")
        low, high = float(factor[0]), float(factor[1])
    else:
        low, high = -float(factor), float(factor)
    if high < low:
        raise layer_error(f"{layer}: `{arg}` cannot have an upper bound below its lower "
                          f"bound, got {factor!r}")
    if bound is not None and (abs(low) > bound or abs(high) > bound):
        raise layer_error(f"{layer}: `{arg}` must have values between [-{bound}, {bound}], "
                          f"got {factor!r}")
    return low, high


class _RandomTransform(Layer):
    """Shared arguments and call: draw [batch, 8] transforms, resample, keep the rank."""

    def __init__(self, fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        name = type(self).__name__
        if fill_mode not in _FILL_MODES:
            raise NotImplementedError(f"{name}: unknown `fill_mode` {fill_mode!r}; only "
                                      f"{_FILL_MODES} are supported")
        if interpolation not in _INTERPOLATIONS:
            raise NotImplementedError(f"{name}: unknown `interpolation` {interpolation!r}; "
                                      f"only {_INTERPOLATIONS} are supported")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value, self.seed = fill_value, seed

    def _transforms(self, batch: Any, height: Any, width: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _transforms")

    def _uniform(self, shape: list, low: float, high: float) -> Any:
        return tf.random.uniform(shape, low, high, seed=self.seed)

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = _images(self, inputs)
        if not training:
            return x
        single = x.shape.rank == 3
        images = tf.expand_dims(x, 0) if single else x
        height, width = images.shape.as_list()[1:3]
        if height is None or width is None:
            raise layer_error(f"{type(self).__name__} {self.name!r}: image height and width "
                              f"must be known, got {x.shape}")
        batch = images.shape.as_list()[0]
        transforms = self._transforms(tf.shape(images)[0] if batch is None else batch,
                                      height, width)
        out = transform(images, transforms, fill_mode=self.fill_mode,
                        fill_value=self.fill_value, interpolation=self.interpolation)
        return out[0] if single else out

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "interpolation": self.interpolation,
                "seed": self.seed}


class RandomRotation(_RandomTransform):
    """Rotate each image by an angle drawn from ``factor * 2 pi`` (a float f: [-f, f] of a
    full turn; a pair: [lower, upper]); counter-clockwise for positive angles."""

    def __init__(self, factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, **kwargs: Any):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.factor = factor
        self.lower, self.upper = _range("RandomRotation", "factor", factor)

    def _transforms(self, batch: Any, height: int, width: int) -> Any:
        turn = 2.0 * 3.141592653589793
        angles = self._uniform([batch], self.lower * turn, self.upper * turn)
        return get_rotation_matrix(angles, height, width)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_RandomTransform):
    """Zoom each image by a factor drawn per axis: height by 1 + [lower, upper] of
    `height_factor` (positive zooms out), width by `width_factor` (None: the same draw as the
    height, keeping the aspect ratio)."""

    def __init__(self, height_factor: Any, width_factor: Any = None,
                 fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0, **kwargs: Any):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_range = _range("RandomZoom", "height_factor", height_factor, 1.0)
        self.width_range = None if width_factor is None else _range(
            "RandomZoom", "width_factor", width_factor, 1.0)

    def _transforms(self, batch: Any, height: int, width: int) -> Any:
        low, high = self.height_range
        height_zoom = self._uniform([batch, 1], 1.0 + low, 1.0 + high)
        width_zoom = height_zoom
        if self.width_range is not None:
            low, high = self.width_range
            width_zoom = self._uniform([batch, 1], 1.0 + low, 1.0 + high)
        return get_zoom_matrix(tf.concat([width_zoom, height_zoom], axis=1), height, width)

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomTranslation(_RandomTransform):
    """Shift each image by fractions of its height and width drawn from `height_factor` and
    `width_factor` (a float f: [-f, f]; a pair: [lower, upper])."""

    def __init__(self, height_factor: Any, width_factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, **kwargs: Any):
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_range = _range("RandomTranslation", "height_factor", height_factor, 1.0)
        self.width_range = _range("RandomTranslation", "width_factor", width_factor, 1.0)

    def _transforms(self, batch: Any, height: int, width: int) -> Any:
        dy = self._uniform([batch, 1], *self.height_range) * float(height)
        dx = self._uniform([batch, 1], *self.width_range) * float(width)
        return get_translation_matrix(tf.concat([dx, dy], axis=1))

    def get_config(self) -> dict:
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}
