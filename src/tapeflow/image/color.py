"""Colour spaces: RGB <-> HSV, YIQ, YUV and grayscale, written with tapeflow ops.

Composed of differentiable ops, so conversions trace, run in ``Dataset.map`` and have gradients
(TensorFlow registers one for RGB -> HSV only). Hue is a fraction of a turn in [0, 1), as in TF.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import Tensor
from tapeflow.image.dtype import convert_image_dtype
from tapeflow.ops import array_ops, linalg_ops, math_ops, reduce_ops

_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]
_GRAY_WEIGHTS = [0.2989, 0.5870, 0.1140]


def _three_channels(images: Any, what: str) -> Tensor:
    x = convert_to_tensor(images)
    shape = x.shape.as_list() if x.shape.rank is not None else None
    if shape is not None and (not shape or shape[-1] not in (None, 3)):
        raise errors.InvalidArgumentError(
            None, what, f"{what}: the last dimension must be 3 (R, G, B), got images of shape "
                        f"{shape} ({x.dtype.name})\n{errors.user_line()}")
    return x


def _channels(x: Tensor) -> list[Tensor]:
    return [x[..., i] for i in range(3)]


def _mix(images: Any, kernel: list, what: str) -> Tensor:
    """images @ kernel along the channel axis (TF's tensordot over the last axis)."""
    x = _three_channels(images, what)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: images must be float, got {x.dtype.name}")
    return linalg_ops.einsum("...c,cd->...d", x, np.asarray(kernel, x.dtype._np))


@export("image.rgb_to_hsv")
def rgb_to_hsv(images: Any, name: str | None = None) -> Tensor:
    """RGB in [0, 1] to (hue, saturation, value); hue 0 where the pixel is gray."""
    x = _three_channels(images, "rgb_to_hsv")
    r, g, b = _channels(x)
    value = reduce_ops.reduce_max(x, axis=-1)
    spread = value - reduce_ops.reduce_min(x, axis=-1)
    one = x.dtype._np.type(1)
    saturation = math_ops.where(value > 0, spread / math_ops.where(value > 0, value, one),
                                0 * value)
    norm = one / (6 * math_ops.where(spread > 0, spread, one))   # safe: gray pixels get hue 0
    hue = math_ops.where(math_ops.equal(r, value), norm * (g - b),
                         math_ops.where(math_ops.equal(g, value), norm * (b - r) + 2.0 / 6.0,
                                        norm * (r - g) + 4.0 / 6.0))
    hue = math_ops.where(spread > 0, hue, 0 * hue)
    hue = math_ops.where(hue < 0, hue + one, hue)
    return array_ops.stack([hue, saturation, value], axis=-1)


@export("image.hsv_to_rgb")
def hsv_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """(hue, saturation, value) to RGB: channel n is v - v s clip(min(k, 4 - k), 0, 1) with
    k = (n + 6 h) mod 6 for n = 5, 3, 1."""
    x = _three_channels(images, "hsv_to_rgb")
    hue, saturation, value = _channels(x)
    chroma = value * saturation
    out = []
    for n in (5.0, 3.0, 1.0):
        k = math_ops.floormod(hue * 6.0 + n, 6.0)
        ramp = math_ops.clip_by_value(math_ops.minimum(k, 4.0 - k), 0.0, 1.0)
        out.append(value - chroma * ramp)
    return array_ops.stack(out, axis=-1)


@export("image.rgb_to_yiq")
def rgb_to_yiq(images: Any) -> Tensor:
    """RGB to YIQ (NTSC luma and chroma)."""
    return _mix(images, _RGB_TO_YIQ, "rgb_to_yiq")


@export("image.yiq_to_rgb")
def yiq_to_rgb(images: Any) -> Tensor:
    """YIQ back to RGB."""
    return _mix(images, _YIQ_TO_RGB, "yiq_to_rgb")


@export("image.rgb_to_yuv")
def rgb_to_yuv(images: Any) -> Tensor:
    """RGB to YUV (BT.601)."""
    return _mix(images, _RGB_TO_YUV, "rgb_to_yuv")


@export("image.yuv_to_rgb")
def yuv_to_rgb(images: Any) -> Tensor:
    """YUV back to RGB."""
    return _mix(images, _YUV_TO_RGB, "yuv_to_rgb")


@export("image.rgb_to_grayscale")
def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """Luma with TF's weights (0.2989, 0.5870, 0.1140), keeping a last axis of 1 and the dtype."""
    x = _three_channels(images, "rgb_to_grayscale")
    flt = convert_image_dtype(x, "float32")
    gray = linalg_ops.einsum("...c,c->...", flt, np.asarray(_GRAY_WEIGHTS, np.float32))
    return convert_image_dtype(array_ops.expand_dims(gray, -1), x.dtype)


@export("image.grayscale_to_rgb")
def grayscale_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """Repeat a single channel three times."""
    x = convert_to_tensor(images)
    if x.shape.rank is not None and x.shape.as_list()[-1] not in (None, 1):
        raise errors.InvalidArgumentError(
            None, "grayscale_to_rgb", f"grayscale_to_rgb: the last dimension must be 1, got "
                                      f"shape {x.shape.as_list()}\n{errors.user_line()}")
    rank = x.shape.rank
    return array_ops.tile(x, [1] * (rank - 1) + [3])
