"""``tf.image.convert_image_dtype``: integer images span [0, MAX], float images [0, 1].

Written with tapeflow ops, so it traces and (for floats) differentiates. TF's rules: int -> float
multiplies by 1/MAX in the target dtype; float -> int multiplies by MAX + 0.5 and truncates
(clamping first only with ``saturate``); int -> int shifts by the ratio of the ranges.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import math_ops


def _max(dtype: _dtypes.DType) -> int:
    return int(np.iinfo(dtype._np).max)


@export("saturate_cast")
def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """``tf.dtypes.saturate_cast``: clamp to `dtype`'s range, then cast (no wrap-around)."""
    x = convert_to_tensor(value)
    target = _dtypes.as_dtype(dtype)
    if target.is_integer and not x.dtype.is_integer:
        info = np.iinfo(target._np)
        x = math_ops.clip_by_value(x, x.dtype._np.type(info.min), x.dtype._np.type(info.max))
    elif target.is_integer and x.dtype.is_integer:
        lo, hi = np.iinfo(target._np).min, np.iinfo(target._np).max
        src = np.iinfo(x.dtype._np)
        if src.min < lo or src.max > hi:
            x = math_ops.clip_by_value(x, max(lo, src.min), min(hi, src.max))
    return math_ops.cast(x, target)


# tf.dtypes is the framework's dtypes module, which sits below this layer: installed from here
_dtypes.saturate_cast = saturate_cast


@export("image.convert_image_dtype")
def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> Tensor:
    """Convert between integer ranges [0, MAX] and float images in [0, 1], as TF does."""
    x = convert_to_tensor(image)
    target = _dtypes.as_dtype(dtype)
    if not (target.is_floating or target.is_integer):
        raise TypeError(f"convert_image_dtype: dtype must be a float or integer type, got "
                        f"{target.name}")
    source = x.dtype
    if source == target:
        return x
    if source.is_integer and target.is_integer:
        scale_in, scale_out = _max(source), _max(target)
        if scale_in > scale_out:
            scaled = math_ops.floordiv(x, source._np.type((scale_in + 1) // (scale_out + 1)))
            return saturate_cast(scaled, target) if saturate else math_ops.cast(scaled, target)
        scaled = saturate_cast(x, target) if saturate else math_ops.cast(x, target)
        return scaled * target._np.type((scale_out + 1) // (scale_in + 1))
    if source.is_floating and target.is_floating:
        return math_ops.cast(x, target)
    if source.is_integer:
        return math_ops.cast(x, target) * target._np.type(1.0 / _max(source))
    scaled = x * source._np.type(_max(target) + 0.5)
    return saturate_cast(scaled, target) if saturate else math_ops.cast(scaled, target)


def as_float(image: Tensor) -> Tensor:
    """The float32 image TF's adjust_* ops compute on (float16/32 images stay as they are)."""
    if image.dtype in (_dtypes.float16, _dtypes.float32):
        return image
    return convert_image_dtype(image, _dtypes.float32)
