"""``ImageProjectiveTransformV3``: resample images through a projective map, as TF does.

Each output pixel (x, y) reads the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k),
k = c0 x + c1 y + 1, from a per-image transform [a0, a1, a2, b0, b1, b2, c0, c1]. Points
outside the image are mapped back in by `fill_mode` (REFLECT, WRAP, NEAREST) or read as
`fill_value` (CONSTANT); values come from the nearest pixel or bilinear interpolation. Keras's
RandomRotation/RandomZoom/RandomTranslation use it through ``transform``.

The op is linear in the image: its gradient is the adjoint scatter-add
(``ImageProjectiveTransformV3Grad``), whose gradient is the forward op again. The transforms
get no gradient (TF's op has none either).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor

_FILL_MODES = ("REFLECT", "WRAP", "CONSTANT", "NEAREST")
_INTERPOLATIONS = ("BILINEAR", "NEAREST")


def _map(c: np.ndarray, length: int, mode: str) -> np.ndarray:
    """TF's MapCoordinate: bring coordinates outside [0, length - 1] back in by `mode`."""
    if mode == "CONSTANT":
        return c
    if mode == "NEAREST" or length <= 1:
        return np.clip(c, 0, length - 1)
    c = c.copy()
    low, high = c < 0, c > length - 1
    if mode == "REFLECT":  # [abcd] -> [dcba|abcd|dcba]
        size2 = 2 * length
        neg = c[low]
        neg = size2 * np.trunc(-neg / size2) + neg
        c[low] = np.where(neg < -length, neg + size2, -neg - 1)
        pos = c[high]
        pos = pos - size2 * np.trunc(pos / size2)
        c[high] = np.where(pos >= length, size2 - pos - 1, pos)
    else:  # WRAP: [abcd] -> [abcd|abcd|abcd]
        span = length - 1
        c[low] = c[low] + length * (np.trunc(-c[low] / span) + 1)
        c[high] = c[high] - length * np.trunc(c[high] / span)
    return np.clip(c, 0, length - 1)


def _taps(shape: tuple, transforms: np.ndarray, out_hw: tuple, interpolation: str,
          fill_mode: str) -> tuple[list, np.ndarray]:
    """([(rows, cols, weights, inside)] per tap, [B, oh, ow] 'projection is zero' mask)."""
    batch, height, width = shape[0], shape[1], shape[2]
    t = np.broadcast_to(transforms.astype(np.float32), (batch, 8))
    ys, xs = np.meshgrid(np.arange(out_hw[0], dtype=np.float32),
                         np.arange(out_hw[1], dtype=np.float32), indexing="ij")

    def col(i: int) -> np.ndarray:
        return t[:, i, None, None]

    k = col(6) * xs + col(7) * ys + np.float32(1)
    degenerate = k == 0
    k = np.where(degenerate, np.float32(1), k)
    x = _map((col(0) * xs + col(1) * ys + col(2)) / k, width, fill_mode)
    y = _map((col(3) * xs + col(4) * ys + col(5)) / k, height, fill_mode)
    if interpolation == "NEAREST":  # std::round: halves away from zero
        corners = [(np.sign(y) * np.floor(np.abs(y) + 0.5), np.sign(x) * np.floor(np.abs(x) + 0.5),
                    np.ones_like(x))]
    else:
        y0, x0 = np.floor(y), np.floor(x)
        fy, fx = y - y0, x - x0
        corners = [(y0, x0, (1 - fy) * (1 - fx)), (y0, x0 + 1, (1 - fy) * fx),
                   (y0 + 1, x0, fy * (1 - fx)), (y0 + 1, x0 + 1, fy * fx)]
    taps = []
    for r, c, w in corners:
        inside = (r >= 0) & (r < height) & (c >= 0) & (c < width)
        rows = np.clip(r, 0, height - 1).astype(np.intp)
        cols = np.clip(c, 0, width - 1).astype(np.intp)
        taps.append((rows, cols, w, inside))
    return taps, degenerate


def _rule(images, transforms, fill_value, *, output_shape, interpolation, fill_mode):
    shape, dtype = images
    batch = shape[0] if shape is not None else None
    channels = shape[3] if shape is not None else None
    return (batch, output_shape[0], output_shape[1], channels), dtype


@op("ImageProjectiveTransformV3", shape=_rule, worker=True)
def _transform(images, transforms, fill_value, *, output_shape, interpolation, fill_mode):
    taps, degenerate = _taps(images.shape, transforms, output_shape, interpolation, fill_mode)
    work = np.float64 if images.dtype == np.float64 else np.float32
    fill = work(fill_value)
    b = np.arange(images.shape[0])[:, None, None]
    out = np.zeros((images.shape[0], *output_shape, images.shape[3]), work)
    for rows, cols, w, inside in taps:
        values = np.where(inside[..., None], images[b, rows, cols].astype(work), fill)
        out += w.astype(work)[..., None] * values
    out = np.where(degenerate[..., None], fill, out)
    return out.astype(images.dtype)


def _grad_rule(g, transforms, like, **attrs):
    return like


@op("ImageProjectiveTransformV3Grad", shape=_grad_rule, worker=True)
def _transform_grad(g, transforms, like, *, output_shape, interpolation, fill_mode):
    """The adjoint of the transform: each output gradient goes back to the input pixels it
    read, times their interpolation weights (fill values read nothing)."""
    taps, degenerate = _taps(like.shape, transforms, g.shape[1:3], interpolation, fill_mode)
    batch, height, width, channels = like.shape
    out = np.zeros((batch * height * width, channels), np.float64)
    b = np.arange(batch)[:, None, None]
    for rows, cols, w, inside in taps:
        weight = np.where(inside & ~degenerate, w, 0.0)
        flat = ((b * height + rows) * width + cols).reshape(-1)
        contrib = (g * weight[..., None]).reshape(-1, channels)
        for ch in range(channels):
            out[:, ch] += np.bincount(flat, weights=contrib[:, ch], minlength=out.shape[0])
    return out.reshape(like.shape).astype(like.dtype)


@_transform.def_grad
def _(g, out, images, transforms, fill_value, **attrs):
    return apply(_transform_grad, g, transforms, images, **attrs), None, None


@_transform_grad.def_grad
def _(gg, out, g, transforms, like, **attrs):
    zero = convert_to_tensor(0.0, dtype=_dtypes.float32)  # the fill is a constant: no slope
    return apply(_transform, gg, transforms, zero, **attrs), None, None


def _static_hw(output_shape: Any) -> tuple[int, int]:
    from tapeflow.ops.misc_ops import get_static_value

    value = get_static_value(output_shape) if isinstance(output_shape, Tensor) else output_shape
    try:
        hw = tuple(int(v) for v in np.asarray(value).reshape(-1))
    except (TypeError, ValueError):
        hw = ()
    if len(hw) != 2 or min(hw) <= 0:
        raise errors.InvalidArgumentError(
            None, "ImageProjectiveTransformV3", f"ImageProjectiveTransformV3: output_shape must "
            f"be 2 known positive ints [height, width], got {output_shape!r}"
            f"\n{errors.user_line()}")
    return hw  # type: ignore[return-value]


@export("raw_ops.ImageProjectiveTransformV3")
def image_projective_transform_v3(*, images: Any, transforms: Any, output_shape: Any,
                                  fill_value: Any, interpolation: str,
                                  fill_mode: str = "CONSTANT", name: str | None = None
                                  ) -> Tensor:
    """tf.raw_ops.ImageProjectiveTransformV3: images [B, H, W, C], transforms [B or 1, 8]."""
    x = convert_to_tensor(images)
    t = convert_to_tensor(transforms, dtype=_dtypes.float32)
    where = "ImageProjectiveTransformV3"
    if x.shape.rank != 4:
        raise errors.InvalidArgumentError(
            None, where, f"{where}: images must be [batch, height, width, channels], got "
                         f"{x.shape}\n{errors.user_line()}")
    if t.shape.rank != 2 or t.shape[1] not in (None, 8) or (
            t.shape[0] not in (None, 1) and x.shape[0] is not None and t.shape[0] != x.shape[0]):
        raise errors.InvalidArgumentError(
            None, where, f"{where}: transforms must be [1 or batch, 8], got {t.shape} for "
                         f"images {x.shape}\n{errors.user_line()}")
    if str(interpolation).upper() not in _INTERPOLATIONS:
        raise errors.InvalidArgumentError(
            None, where, f"{where}: interpolation must be one of {_INTERPOLATIONS}, got "
                         f"{interpolation!r}\n{errors.user_line()}")
    if str(fill_mode).upper() not in _FILL_MODES:
        raise errors.InvalidArgumentError(
            None, where, f"{where}: fill_mode must be one of {_FILL_MODES}, got "
                         f"{fill_mode!r}\n{errors.user_line()}")
    return apply(_transform, x, t, convert_to_tensor(fill_value, dtype=_dtypes.float32),
                 output_shape=_static_hw(output_shape), interpolation=str(interpolation).upper(),
                 fill_mode=str(fill_mode).upper())
