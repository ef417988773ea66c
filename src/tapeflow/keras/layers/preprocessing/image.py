"""Image preprocessing layers: Rescaling, Resizing, CenterCrop and the random augmentations
RandomCrop, RandomFlip, RandomContrast, RandomBrightness (Keras 2 names, defaults, configs).

Random layers act only with ``training=True`` (``fit`` passes it), as in Keras; at inference they
are the identity (RandomCrop resizes, as Keras does). They are built on ``tf.image``, so they
trace and run in ``Dataset.map``.
"""

from __future__ import annotations

from typing import Any

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
    then resize (Keras's integer arithmetic for the crop box)."""
    img = tf.convert_to_tensor(x)
    height, width = img.shape.as_list()[-3:-1]
    th, tw = (int(s) for s in size)
    crop_h = min(height, int(float(width * th) / tw))
    crop_w = min(width, int(float(height * tw) / th))
    top, left = int(float(height - crop_h) / 2), int(float(width - crop_w) / 2)
    img = img[..., top:top + crop_h, left:left + crop_w, :]
    return tf.image.resize(img, [th, tw], method=interpolation)


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
