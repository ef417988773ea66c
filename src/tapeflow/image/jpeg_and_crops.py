"""``tf.image`` ops built from others: adjust_jpeg_quality / random_jpeg_quality /
stateless_random_jpeg_quality (a JPEG round trip at a given or drawn quality, float images
converted to uint8 and back as TF does), stateless_random_crop (TF's offset draw: a stateless
uniform integer per dimension modulo the room left, so the same seed crops where TF does), and
extract_glimpse (windows around given offsets, outside pixels from noise or zeros)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.image.decode import decode_jpeg, encode_jpeg
from tapeflow.image.dtype import convert_image_dtype
from tapeflow.ops import array_ops, indexing_ops, math_ops
from tapeflow.ops.stateless_random import stateless_uniform


def _jpeg_round_trip(image: Any, quality: Any) -> Any:
    x = convert_to_tensor(image)
    q = int(np.asarray(quality.numpy() if hasattr(quality, "numpy") else quality))
    if not 0 <= q <= 100:
        raise ValueError(f"jpeg_quality must be in [0, 100], got {q}")
    pixels = convert_image_dtype(x, _dtypes.uint8, saturate=True)
    channels = int(pixels.shape[-1])
    if pixels.shape.rank == 4:
        out = array_ops.stack([decode_jpeg(encode_jpeg(img, quality=q), channels=channels)
                               for img in array_ops.unstack(pixels)])
    else:
        out = decode_jpeg(encode_jpeg(pixels, quality=q), channels=channels)
    return convert_image_dtype(out, x.dtype)


@export("image.adjust_jpeg_quality")
def adjust_jpeg_quality(image: Any, jpeg_quality: Any, dct_method: str = "",
                        name: str | None = None) -> Any:
    """The image after a JPEG encode/decode at jpeg_quality (0-100), in its own dtype."""
    return _jpeg_round_trip(image, jpeg_quality)


@export("image.random_jpeg_quality")
def random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int,
                        seed: int | None = None) -> Any:
    """adjust_jpeg_quality at a quality drawn uniformly from [min, max)."""
    from tapeflow.ops.random_ops import uniform

    _check_range(min_jpeg_quality, max_jpeg_quality)
    q = uniform([], min_jpeg_quality, max_jpeg_quality, dtype=_dtypes.int32, seed=seed)
    return _jpeg_round_trip(image, q)


@export("image.stateless_random_jpeg_quality")
def stateless_random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int,
                                  seed: Any) -> Any:
    """adjust_jpeg_quality at the quality TF draws from the seed in [min, max)."""
    _check_range(min_jpeg_quality, max_jpeg_quality)
    q = stateless_uniform([], seed, min_jpeg_quality, max_jpeg_quality, dtype=_dtypes.int32)
    return _jpeg_round_trip(image, q)


def _check_range(lo: int, hi: int) -> None:
    if not 0 <= lo < hi <= 100:
        raise ValueError(f"jpeg quality range must satisfy 0 <= min < max <= 100, got "
                         f"[{lo}, {hi})")


@export("image.stateless_random_crop")
def stateless_random_crop(value: Any, size: Any, seed: Any, name: str | None = None) -> Any:
    """A block of shape `size` at offsets drawn from the seed as TF draws them."""
    x = convert_to_tensor(value)
    size = [int(v) for v in np.asarray(size.numpy() if hasattr(size, "numpy") else size)
            .reshape(-1)]
    shape = x.shape.as_list()
    if len(size) != len(shape) or any(s > d for s, d in zip(size, shape)):
        raise ValueError(f"stateless_random_crop: need size <= shape, got {size} for {shape}")
    limit = convert_to_tensor(np.asarray(shape, np.int32) - np.asarray(size, np.int32) + 1)
    offsets = stateless_uniform([len(size)], seed, maxval=np.iinfo(np.int32).max,
                                dtype=_dtypes.int32)
    return indexing_ops.slice_(x, math_ops.floormod(offsets, limit), size)


@op("ExtractGlimpseV2", random=True, shape=lambda x, size, offsets, *, centered, normalized,
    noise, gen: ((x[0][0] if x[0] else None, None, None, x[0][-1] if x[0] else None), x[1]))
def _glimpse(x, size, offsets, *, centered, normalized, noise, gen):
    batch, height, width, depth = x.shape
    gh, gw = (int(v) for v in size)
    out = np.empty((batch, gh, gw, depth), x.dtype)
    for b in range(batch):
        oy, ox = (np.float32(v) for v in offsets[b])
        # TF's kernel: only normalized centered offsets name the window's center (half the
        # window is subtracted); otherwise they name its upper-left corner; then truncation
        if normalized:
            oy, ox = oy * height, ox * width
            if centered:
                oy, ox = oy / 2 + height / 2 - gh / 2, ox / 2 + width / 2 - gw / 2
        elif centered:
            oy, ox = oy + height / 2, ox + width / 2
        top, left = int(oy), int(ox)
        if noise == "zero":
            fill = np.zeros((gh, gw, depth))
        elif noise == "gaussian":
            fill = gen.standard_normal((gh, gw, depth))
        else:
            fill = gen.uniform(size=(gh, gw, depth))
        window = fill.astype(x.dtype)
        r0, c0 = max(top, 0), max(left, 0)
        r1, c1 = min(top + gh, height), min(left + gw, width)
        if r0 < r1 and c0 < c1:
            window[r0 - top:r1 - top, c0 - left:c1 - left] = x[b, r0:r1, c0:c1]
        out[b] = window
    return out


@export("image.extract_glimpse")
def extract_glimpse(input: Any, size: Any, offsets: Any, centered: bool = True,  # noqa: A002
                    normalized: bool = True, noise: str = "uniform",
                    name: str | None = None) -> Any:
    """A size [h, w] window of each image at its (y, x) offset: with centered and normalized
    (the default) the offset in [-1, 1] is the window's center; otherwise, as TF's kernel, it
    is the window's upper-left corner (relative to the image center with `centered`, in
    fractions of the image with `normalized`). Pixels outside the image are noise
    ('uniform', 'gaussian') or 'zero'."""
    from tapeflow.ops.random_ops import make_generator

    if noise not in ("uniform", "gaussian", "zero"):
        raise ValueError(f"noise must be 'uniform', 'gaussian' or 'zero', got {noise!r}")
    x = convert_to_tensor(input)
    return apply(_glimpse, x, convert_to_tensor(size, _dtypes.int32),
                 convert_to_tensor(offsets, _dtypes.float32), centered=bool(centered),
                 normalized=bool(normalized), noise=noise, gen=make_generator(None))
