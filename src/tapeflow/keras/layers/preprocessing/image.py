"""Image preprocessing layers: Rescaling, Resizing, CenterCrop and the random augmentations
RandomCrop, RandomHeight, RandomWidth, RandomFlip, RandomContrast, RandomBrightness (Keras 2
names, defaults, configs).

Random layers act only with ``training=True`` (``fit`` passes it), as in Keras; at inference they
are the identity (RandomCrop resizes, as Keras does). They are built on ``tf.image``, so they
trace and run in ``Dataset.map``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error


def _images(layer: Layer, inputs: Any) -> Any:
    x = tf.convert_to_tensor(inputs)
    if x.shape.rank not in (3, 4):
        raise layer_error(f"{type(layer).__name__} {layer.name!r}: expected images of shape "
                          f"[height, width, channels] or [batch, height, width, channels], got "
                          f"{x.shape} ({x.dtype.name})")
    return tf.cast(x, layer.compute_dtype) if x.dtype.name != layer.compute_dtype else x


def smart_resize(x: Any, size: Any, interpolation: str = "bilinear") -> Any:
    """``tf.keras.preprocessing.image.smart_resize``: centre-crop to the target aspect ratio,
    then resize (Keras's integer arithmetic for the crop box). A NumPy image in gives a
    NumPy image out, as Keras."""
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    img = tf.convert_to_tensor(x)
    if img.shape.rank is not None and img.shape.rank not in (3, 4):
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or "
                         "`(batch_size, height, width, channels)`, but got input with "
                         f"incorrect rank, of shape {img.shape}.")
    height, width = img.shape.as_list()[-3:-1]
    th, tw = (int(s) for s in size)
    crop_h = min(height, int(float(width * th) / tw))
    crop_w = min(width, int(float(height * tw) / th))
    top, left = int(float(height - crop_h) / 2), int(float(width - crop_w) / 2)
    img = img[..., top:top + crop_h, left:left + crop_w, :]
    out = tf.image.resize(img, [th, tw], method=interpolation)
    return out.numpy() if isinstance(x, np.ndarray) else out


class Rescaling(Layer):
    """inputs * scale + offset (e.g. ``scale=1/255`` maps [0, 255] pixels to [0, 1])."""

    def __init__(self, scale: float, offset: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.scale, self.offset = scale, offset

    def call(self, inputs: Any) -> Any:
        x = tf.cast(tf.convert_to_tensor(inputs), self.compute_dtype)
        return x * tf.cast(self.scale, x.dtype) + tf.cast(self.offset, x.dtype)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class _SizedLayer(Layer):
    """A layer producing height x width images."""

    def __init__(self, height: int, width: int, **kwargs: Any):
        super().__init__(**kwargs)
        if int(height) <= 0 or int(width) <= 0:
            raise layer_error(f"{type(self).__name__}: height and width must be positive, got "
                              f"({height}, {width})")
        self.height, self.width = int(height), int(width)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        dims[-3:-1] = [self.height, self.width]
        return tf.TensorShape(dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "height": self.height, "width": self.width}


class Resizing(_SizedLayer):
    """Resize images to (height, width); ``crop_to_aspect_ratio`` crops first (smart_resize)."""

    def __init__(self, height: int, width: int, interpolation: str = "bilinear",
                 crop_to_aspect_ratio: bool = False, **kwargs: Any):
        super().__init__(height, width, **kwargs)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio

    def call(self, inputs: Any) -> Any:
        x = _images(self, inputs)
        size = [self.height, self.width]
        if self.crop_to_aspect_ratio:
            out = smart_resize(x, size, self.interpolation)
        else:
            out = tf.image.resize(x, size, method=self.interpolation)
        return tf.cast(out, self.compute_dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "interpolation": self.interpolation,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio}


class CenterCrop(_SizedLayer):
    """The central height x width window; an image smaller than that is resized (smart_resize)."""

    def call(self, inputs: Any) -> Any:
        x = _images(self, inputs)
        height, width = x.shape.as_list()[-3:-1]
        if height >= self.height and width >= self.width:
            top, left = (height - self.height) // 2, (width - self.width) // 2
            return tf.image.crop_to_bounding_box(x, top, left, self.height, self.width)
        return tf.cast(smart_resize(x, [self.height, self.width]), self.compute_dtype)


class RandomCrop(_SizedLayer):
    """Training: a random height x width window (the same offset for the whole batch, as
    ``tf.image.random_crop`` draws it); inference: resize to the largest matching window."""

    def __init__(self, height: int, width: int, seed: int | None = None, **kwargs: Any):
        super().__init__(height, width, **kwargs)
        self.seed = seed

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = _images(self, inputs)
        height, width = x.shape.as_list()[-3:-1]
        if training and height >= self.height and width >= self.width:
            size = list(x.shape.as_list())
            size[-3:-1] = [self.height, self.width]
            if size[0] is None:
                raise layer_error(f"RandomCrop {self.name!r}: the batch size must be known")
            return tf.image.random_crop(x, size, seed=self.seed)
        return tf.cast(smart_resize(x, [self.height, self.width]), self.compute_dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "seed": self.seed}


_RESIZE_METHODS = ("bilinear", "nearest", "bicubic", "area", "lanczos3")


class _RandomSide(Layer):
    """Training: stretch or squeeze one image axis (``_axis``) by a factor drawn once per
    call from 1 + [lower, upper] (the whole batch alike, as Keras); inference: the identity.
    The new size is ``int(factor * size)`` (float32 product, truncated), as Keras."""

    _axis = -3

    def __init__(self, factor: Any, interpolation: str = "bilinear", seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        name = type(self).__name__
        lower, upper = (factor[0], factor[1]) if isinstance(factor, (tuple, list)) \
            else (-factor, factor)
        if upper < lower:
            raise ValueError("`factor` argument cannot have an upper bound lesser than the "
                             f"lower bound. Received: factor={factor}")
        if lower < -1.0 or upper < -1.0:
            raise ValueError("`factor` argument must have values larger than -1. "
                             f"Received: factor={factor}")
        if interpolation not in _RESIZE_METHODS:
            raise NotImplementedError(f"{name}: value not recognized for `interpolation`: "
                                      f"{interpolation!r}. Supported values are: "
                                      f"{_RESIZE_METHODS}")
        self.factor, self.lower, self.upper = factor, float(lower), float(upper)
        self.interpolation, self.seed = interpolation, seed

    def _resize(self, x: Any, size: Any) -> Any:
        sizes = x.shape.as_list()[-3:-1]
        sizes[self._axis + 3] = int(size)
        return tf.cast(tf.image.resize(x, sizes, method=self.interpolation), self.compute_dtype)

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = _images(self, inputs)
        if not training:
            return x
        factor = tf.random.uniform([], 1.0 + self.lower, 1.0 + self.upper, seed=self.seed)
        side = tf.cast(tf.shape(x)[self._axis], tf.float32)
        size = tf.cast(factor * side, tf.int32)
        if tf.executing_eagerly():
            return self._resize(x, size.numpy())
        # traced: the output size is data, so the resize runs as a Python op at run time
        out = tf.py_function(lambda images, n: self._resize(images, n.numpy()), [x, size],
                             self.compute_dtype)
        shape = x.shape.as_list()
        shape[self._axis] = None
        out.set_shape(shape)
        return out

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        dims[self._axis] = None
        return tf.TensorShape(dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor,
                "interpolation": self.interpolation, "seed": self.seed}


class RandomHeight(_RandomSide):
    """Training: resize the images' height by a random factor ``1 + [lower, upper]`` of
    `factor` (a float f: [-f, f]; a pair: [lower, upper]), keeping the width."""

    _axis = -3


class RandomWidth(_RandomSide):
    """Training: resize the images' width by a random factor ``1 + [lower, upper]`` of
    `factor` (a float f: [-f, f]; a pair: [lower, upper]), keeping the height."""

    _axis = -2


HORIZONTAL, VERTICAL, HORIZONTAL_AND_VERTICAL = "horizontal", "vertical", "horizontal_and_vertical"


class RandomFlip(Layer):
    """Training: mirror each image left-right and/or up-down with probability 1/2."""

    def __init__(self, mode: str = HORIZONTAL_AND_VERTICAL, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if mode not in (HORIZONTAL, VERTICAL, HORIZONTAL_AND_VERTICAL):
            raise layer_error(f"RandomFlip layer {self.name} received an unknown mode argument "
                              f"{mode}")
        self.mode, self.seed = mode, seed

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = _images(self, inputs)
        if not training:
            return x
        if self.mode in (HORIZONTAL, HORIZONTAL_AND_VERTICAL):
            x = tf.image.random_flip_left_right(x, seed=self.seed)
        if self.mode in (VERTICAL, HORIZONTAL_AND_VERTICAL):
            x = tf.image.random_flip_up_down(x, seed=self.seed)
        return x

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "mode": self.mode, "seed": self.seed}


def _factor_range(layer: str, factor: Any) -> tuple[float, float]:
    """A factor f means [-f, f]; a pair (a, b) means [a, b]."""
    low, high = (-float(factor), float(factor)) if not isinstance(factor, (tuple, list)) \
        else (float(factor[0]), float(factor[1]))
    if low > high:
        raise layer_error(f"{layer}: factor's lower bound {low} is above its upper bound {high}")
    return low, high


class RandomContrast(Layer):
    """Training: adjust_contrast by a factor drawn from [1 - lower, 1 + upper], clipped to
    [0, 255] as Keras does."""

    def __init__(self, factor: Any, seed: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(factor, (tuple, list)):
            lower, upper = (float(f) for f in factor)
        else:
            lower = upper = float(factor)
        if lower < 0.0 or upper < 0.0 or lower > 1.0:
            raise layer_error(f"RandomContrast: factor cannot have negative values or a lower "
                              f"bound above 1, got {factor}")
        self.factor, self.lower, self.upper, self.seed = factor, lower, upper, seed

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = _images(self, inputs)
        if not training:
            return x
        out = tf.image.random_contrast(x, 1.0 - self.lower, 1.0 + self.upper, seed=self.seed)
        return tf.clip_by_value(out, 0.0, 255.0)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor, "seed": self.seed}


class RandomBrightness(Layer):
    """Training: add a delta per image drawn from factor * (value range), then clip to it."""

    def __init__(self, factor: Any, value_range: Any = (0, 255), seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        low, high = _factor_range("RandomBrightness", factor)
        if low < -1.0 or high > 1.0:
            raise layer_error(f"RandomBrightness: factor must be within [-1.0, 1.0], got "
                              f"{factor}")
        self.factor, self.value_range, self.seed = factor, tuple(value_range), seed
        self._low, self._high = low, high

    def call(self, inputs: Any, training: Any = True) -> Any:
        x = _images(self, inputs)
        if not training:
            return x
        lo, hi = (float(v) for v in self.value_range)
        shape = [x.shape.as_list()[0] or 1, 1, 1, 1] if x.shape.rank == 4 else [1, 1, 1]
        delta = tf.random.uniform(shape, self._low, self._high, seed=self.seed) * (hi - lo)
        return tf.clip_by_value(x + tf.cast(delta, x.dtype), lo, hi)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "factor": self.factor,
                "value_range": list(self.value_range), "seed": self.seed}
