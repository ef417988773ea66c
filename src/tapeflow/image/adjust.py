"""Photometric adjustments: brightness, contrast, gamma, hue, saturation, standardization, and
their random forms for augmentation.

Integer images are adjusted as float32 in [0, 1] and converted back (saturating where TF does);
float16/float32 images are adjusted as they are. Every function is tapeflow ops, so it traces
and has gradients; random ones draw one value per call from ``tf.random.uniform`` with `seed`.
"""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import Tensor
from tapeflow.image.color import _three_channels, hsv_to_rgb, rgb_to_hsv
from tapeflow.image.dtype import as_float, convert_image_dtype
from tapeflow.ops import array_ops, math_ops, random_ops, reduce_ops


def _image(image: Any, what: str, min_rank: int = 3) -> Tensor:
    x = convert_to_tensor(image)
    if x.shape.rank is not None and x.shape.rank < min_rank:
        raise errors.InvalidArgumentError(
            None, what, f"{what}: expected an image of rank >= {min_rank} ([height, width, "
                        f"channels]), got shape {x.shape.as_list()}\n{errors.user_line()}")
    return x


def _factor(value: Any, like: Tensor) -> Tensor:
    return math_ops.cast(convert_to_tensor(value), like.dtype)


@export("image.adjust_brightness")
def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """image + delta (in [0, 1] units for integer images, which saturate)."""
    x = _image(image, "adjust_brightness", 0)
    flt = as_float(x)
    return convert_image_dtype(flt + _factor(delta, flt), x.dtype, saturate=True)


@export("image.adjust_contrast")
def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """(x - mean) * factor + mean, the mean taken per image and channel over height and width."""
    x = _image(images, "adjust_contrast")
    flt = as_float(x)
    mean = reduce_ops.reduce_mean(flt, axis=[-3, -2], keepdims=True)
    adjusted = (flt - mean) * _factor(contrast_factor, flt) + mean
    return convert_image_dtype(adjusted, x.dtype, saturate=True)


@export("image.adjust_gamma")
def adjust_gamma(image: Any, gamma: Any = 1, gain: Any = 1) -> Tensor:
    """gain * image ** gamma (gamma >= 0)."""
    x = _image(image, "adjust_gamma", 0)
    if not isinstance(gamma, Tensor) and float(gamma) < 0:
        raise ValueError(f"adjust_gamma: gamma should be a non-negative real number, got {gamma}")
    flt = as_float(x)
    adjusted = _factor(gain, flt) * flt ** _factor(gamma, flt)
    return convert_image_dtype(adjusted, x.dtype, saturate=True)


@export("image.adjust_hue")
def adjust_hue(image: Any, delta: Any, name: str | None = None) -> Tensor:
    """Rotate the hue by `delta` turns (in [-1, 1])."""
    if not isinstance(delta, Tensor) and not -1.0 <= float(delta) <= 1.0:
        raise ValueError(f"adjust_hue: delta must be in the interval [-1, 1], got {delta}")
    x = _three_channels(image, "adjust_hue")
    hsv = rgb_to_hsv(as_float(x))
    flt_delta = _factor(delta, hsv)
    hue = math_ops.floormod(hsv[..., 0] + flt_delta, hsv.dtype._np.type(1.0))
    rgb = hsv_to_rgb(array_ops.stack([hue, hsv[..., 1], hsv[..., 2]], axis=-1))
    return convert_image_dtype(rgb, x.dtype)


@export("image.adjust_saturation")
def adjust_saturation(image: Any, saturation_factor: Any, name: str | None = None) -> Tensor:
    """Scale the saturation by `saturation_factor`, clipped to [0, 1]."""
    x = _three_channels(image, "adjust_saturation")
    hsv = rgb_to_hsv(as_float(x))
    sat = math_ops.clip_by_value(hsv[..., 1] * _factor(saturation_factor, hsv), 0.0, 1.0)
    rgb = hsv_to_rgb(array_ops.stack([hsv[..., 0], sat, hsv[..., 2]], axis=-1))
    return convert_image_dtype(rgb, x.dtype)


@export("image.per_image_standardization")
def per_image_standardization(image: Any) -> Tensor:
    """(x - mean) / max(stddev, 1 / sqrt(N)) per image, N its number of elements; float32."""
    x = math_ops.cast(_image(image, "per_image_standardization"), _dtypes.float32)
    axes = [-3, -2, -1]
    mean = reduce_ops.reduce_mean(x, axis=axes, keepdims=True)
    std = reduce_ops.reduce_std(x, axis=axes, keepdims=True)
    dims = x.shape.as_list()[-3:]
    if None in dims:
        count = math_ops.cast(reduce_ops.reduce_prod(array_ops.shape(x)[-3:]), _dtypes.float32)
    else:
        count = float(dims[0] * dims[1] * dims[2])
    floor = math_ops.rsqrt(convert_to_tensor(count, _dtypes.float32))
    return (x - mean) / math_ops.maximum(std, floor)


def _check_range(lower: float, upper: float, what: str) -> None:
    if upper <= lower:
        raise ValueError(f"{what}: upper must be > lower, got lower={lower}, upper={upper}")
    if lower < 0:
        raise ValueError(f"{what}: lower must be non-negative, got {lower}")


def _uniform(low: float, high: float, seed: int | None) -> Tensor:
    return random_ops.uniform([], low, high, seed=seed)


@export("image.random_brightness")
def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_brightness by a delta drawn from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError(f"random_brightness: max_delta must be non-negative, got {max_delta}")
    return adjust_brightness(image, _uniform(-max_delta, max_delta, seed))


@export("image.random_contrast")
def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_contrast by a factor drawn from [lower, upper)."""
    _check_range(lower, upper, "random_contrast")
    return adjust_contrast(image, _uniform(lower, upper, seed))


@export("image.random_saturation")
def random_saturation(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_saturation by a factor drawn from [lower, upper)."""
    _check_range(lower, upper, "random_saturation")
    return adjust_saturation(image, _uniform(lower, upper, seed))


@export("image.random_hue")
def random_hue(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_hue by a delta drawn from [-max_delta, max_delta), max_delta <= 0.5."""
    if not 0 <= max_delta <= 0.5:
        raise ValueError(f"random_hue: max_delta must be in [0, 0.5], got {max_delta}")
    return adjust_hue(image, _uniform(-max_delta, max_delta, seed))
