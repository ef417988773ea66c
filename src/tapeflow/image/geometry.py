"""Geometric transforms: flips, rotations, crops and pads, with TF's offsets and checks.

All are tapeflow ops (reverse, transpose, slices, pads), so they trace and differentiate. Images
are [height, width, channels] or batches [batch, height, width, channels].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.graph import control_flow
from tapeflow.ops import array_ops, indexing_ops, math_ops, random_ops


def _image(image: Any, what: str) -> Tensor:
    x = convert_to_tensor(image)
    if x.shape.rank not in (3, 4):
        raise errors.InvalidArgumentError(
            None, what, f"{what}: 'image' must have either 3 or 4 dimensions ([height, width, "
                        f"channels] or a batch of them), got shape "
                        f"{x.shape.as_list() if x.shape.rank is not None else None}\n"
                        f"{errors.user_line()}")
    return x


def _hw(x: Tensor) -> tuple[Any, Any]:
    """Height and width: ints where static, else scalar tensors."""
    dims = x.shape.as_list()[-3:-1]
    if None not in dims:
        return dims[0], dims[1]
    run_time = array_ops.shape(x)
    return (dims[0] if dims[0] is not None else run_time[-3],
            dims[1] if dims[1] is not None else run_time[-2])


def _static_int(value: Any, what: str, arg: str) -> int:
    if isinstance(value, Tensor) and not isinstance(value, EagerTensor):
        raise errors.InvalidArgumentError(
            None, what, f"{what}: `{arg}` must be known when tracing (a Python int or an eager "
                        f"tensor), got {value!r}\n{errors.user_line()}")
    return int(value.numpy() if hasattr(value, "numpy") else value)


@export("image.flip_left_right")
def flip_left_right(image: Any) -> Tensor:
    """Mirror the width axis."""
    return array_ops.reverse(_image(image, "flip_left_right"), [-2])


@export("image.flip_up_down")
def flip_up_down(image: Any) -> Tensor:
    """Mirror the height axis."""
    return array_ops.reverse(_image(image, "flip_up_down"), [-3])


def _random_flip(image: Any, axis: int, seed: int | None, what: str) -> Tensor:
    x = _image(image, what)
    if x.shape.rank == 3:
        coin = random_ops.uniform([], 0, 1.0, seed=seed)
        return control_flow.cond(coin < 0.5, lambda: array_ops.reverse(x, [axis]),
                                     lambda: x)
    batch = x.shape.as_list()[0]
    batch = array_ops.shape(x)[0] if batch is None else batch
    coins = random_ops.uniform(array_ops.stack([batch]) if isinstance(batch, Tensor) else [batch],
                               0, 1.0, seed=seed)
    flips = math_ops.cast(array_ops.reshape(math_ops.round(coins), [-1, 1, 1, 1]), x.dtype)
    return flips * array_ops.reverse(x, [axis]) + (1 - flips) * x


@export("image.random_flip_left_right")
def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Mirror the width axis with probability 1/2 (per image of a batch)."""
    return _random_flip(image, -2, seed, "random_flip_left_right")


@export("image.random_flip_up_down")
def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Mirror the height axis with probability 1/2 (per image of a batch)."""
    return _random_flip(image, -3, seed, "random_flip_up_down")


@export("image.transpose")
def transpose(image: Any, name: str | None = None) -> Tensor:
    """Swap height and width."""
    x = _image(image, "transpose")
    perm = [1, 0, 2] if x.shape.rank == 3 else [0, 2, 1, 3]
    return array_ops.transpose(x, perm)


@export("image.rot90")
def rot90(image: Any, k: Any = 1, name: str | None = None) -> Tensor:
    """Rotate counter-clockwise by k quarter turns."""
    x = _image(image, "rot90")
    turns = _static_int(k, "rot90", "k") % 4
    if turns == 0:
        return x
    if turns == 2:
        return array_ops.reverse(x, [-3, -2])
    swapped = transpose(x)
    return transpose(array_ops.reverse(x, [-2])) if turns == 1 else array_ops.reverse(swapped,
                                                                                        [-2])


def _window(x: Tensor, top: Any, left: Any, height: int, width: int) -> Tensor:
    if x.shape.rank == 3:
        return indexing_ops.slice_(x, [top, left, 0], [height, width, -1])
    return indexing_ops.slice_(x, [0, top, left, 0], [-1, height, width, -1])


@export("image.crop_to_bounding_box")
def crop_to_bounding_box(image: Any, offset_height: Any, offset_width: Any,
                         target_height: Any, target_width: Any) -> Tensor:
    """The target_height x target_width block whose top-left corner is at the offsets."""
    x = _image(image, "crop_to_bounding_box")
    th = _static_int(target_height, "crop_to_bounding_box", "target_height")
    tw = _static_int(target_width, "crop_to_bounding_box", "target_width")
    static = not any(isinstance(v, Tensor) and not isinstance(v, EagerTensor)
                     for v in (offset_height, offset_width))
    if static:
        top, left = int(offset_height), int(offset_width)
        height, width = _hw(x)
        problems = [msg for bad, msg in (
            (top < 0, "offset_height must be >= 0"), (left < 0, "offset_width must be >= 0"),
            (th <= 0, "target_height must be > 0"), (tw <= 0, "target_width must be > 0"),
            (isinstance(height, int) and top + th > height,
             "height must be >= target + offset"),
            (isinstance(width, int) and left + tw > width, "width must be >= target + offset"),
        ) if bad]
        if problems:
            raise errors.InvalidArgumentError(
                None, "crop_to_bounding_box",
                f"crop_to_bounding_box: {'; '.join(problems)} (image shape "
                f"{x.shape.as_list()}, offsets ({top}, {left}), target ({th}, {tw}))\n"
                f"{errors.user_line()}")
        return _window(x, top, left, th, tw)
    top = math_ops.cast(convert_to_tensor(offset_height), _dtypes.int64)
    left = math_ops.cast(convert_to_tensor(offset_width), _dtypes.int64)
    zero = convert_to_tensor(np.int64(0))
    begin = [top, left, zero] if x.shape.rank == 3 else [zero, top, left, zero]
    size = [th, tw, -1] if x.shape.rank == 3 else [-1, th, tw, -1]
    return indexing_ops.slice_(x, array_ops.stack(begin), size)


@export("image.pad_to_bounding_box")
def pad_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                        target_width: int) -> Tensor:
    """Zero-pad to target_height x target_width with the image's top-left at the offsets."""
    x = _image(image, "pad_to_bounding_box")
    height, width = _hw(x)
    if not isinstance(height, int) or not isinstance(width, int):
        raise errors.InvalidArgumentError(
            None, "pad_to_bounding_box", f"pad_to_bounding_box: the image's height and width "
                                         f"must be known when tracing, got shape "
                                         f"{x.shape.as_list()}\n{errors.user_line()}")
    values = [_static_int(v, "pad_to_bounding_box", arg) for v, arg in (
        (offset_height, "offset_height"), (offset_width, "offset_width"),
        (target_height, "target_height"), (target_width, "target_width"))]
    top, left, th, tw = values
    below, right = th - top - height, tw - left - width
    problems = [msg for bad, msg in (
        (top < 0, "offset_height must be >= 0"), (left < 0, "offset_width must be >= 0"),
        (below < 0, "height must be <= target - offset"),
        (right < 0, "width must be <= target - offset")) if bad]
    if problems:
        raise errors.InvalidArgumentError(
            None, "pad_to_bounding_box", f"pad_to_bounding_box: {'; '.join(problems)} (image "
                                         f"shape {x.shape.as_list()}, offsets ({top}, {left}), "
                                         f"target ({th}, {tw}))\n{errors.user_line()}")
    paddings = [[top, below], [left, right], [0, 0]]
    return array_ops.pad(x, paddings if x.shape.rank == 3 else [[0, 0]] + paddings)


@export("image.central_crop")
def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The centre `central_fraction` of height and width (TF's offsets: int((n - n f) / 2))."""
    x = _image(image, "central_crop")
    fraction = float(central_fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"central_crop: central_fraction must be within (0, 1], got {fraction}")
    if fraction == 1.0:
        return x
    height, width = _hw(x)
    if not isinstance(height, int) or not isinstance(width, int):
        raise errors.InvalidArgumentError(
            None, "central_crop", f"central_crop: height and width must be known when tracing, "
                                  f"got shape {x.shape.as_list()}\n{errors.user_line()}")
    top = int((float(height) - float(height) * fraction) / 2)
    left = int((float(width) - float(width) * fraction) / 2)
    return _window(x, top, left, height - 2 * top, width - 2 * left)


@export("image.resize_with_crop_or_pad", "image.resize_image_with_crop_or_pad")
def resize_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> Tensor:
    """Centre-crop and/or zero-pad to the target size (TF's offsets)."""
    x = _image(image, "resize_with_crop_or_pad")
    th = _static_int(target_height, "resize_with_crop_or_pad", "target_height")
    tw = _static_int(target_width, "resize_with_crop_or_pad", "target_width")
    if th <= 0 or tw <= 0:
        raise ValueError(f"resize_with_crop_or_pad: target_height and target_width must be > 0, "
                         f"got ({th}, {tw})")
    height, width = _hw(x)
    crop_top, pad_top = max(-(th - height) // 2, 0), max((th - height) // 2, 0)
    crop_left, pad_left = max(-(tw - width) // 2, 0), max((tw - width) // 2, 0)
    cropped = crop_to_bounding_box(x, crop_top, crop_left, min(th, height), min(tw, width))
    return pad_to_bounding_box(cropped, pad_top, pad_left, th, tw)


@export("image.resize_with_pad")
def resize_with_pad(image: Any, target_height: int, target_width: int,
                    method: str = "bilinear", antialias: bool = False) -> Tensor:
    """Resize keeping the aspect ratio to fit inside the target, then zero-pad to it."""
    from tapeflow.image.resize import resize

    x = _image(image, "resize_with_pad")
    th = _static_int(target_height, "resize_with_pad", "target_height")
    tw = _static_int(target_width, "resize_with_pad", "target_width")
    height, width = _hw(x)
    f32 = np.float32   # TF computes the sizes in float32
    ratio = max(f32(width) / f32(tw), f32(height) / f32(th))
    new_h, new_w = f32(height) / ratio, f32(width) / ratio
    top = max(0, int(np.floor((f32(th) - new_h) / f32(2))))
    left = max(0, int(np.floor((f32(tw) - new_w) / f32(2))))
    resized = resize(x, [int(np.floor(new_h)), int(np.floor(new_w))], method=method,
                     antialias=antialias)
    return pad_to_bounding_box(resized, top, left, th, tw)


@export("image.random_crop", "random_crop")
def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A block of shape `size` at a uniformly drawn offset (any rank)."""
    x = convert_to_tensor(value)
    size = [_static_int(s, "random_crop", "size") for s in np.asarray(
        size.numpy() if hasattr(size, "numpy") else size).reshape(-1)]
    shape = x.shape.as_list()
    if len(size) != len(shape):
        raise errors.InvalidArgumentError(
            None, "random_crop", f"random_crop: size {size} has {len(size)} entries for a value "
                                 f"of shape {shape}\n{errors.user_line()}")
    if any(d is not None and s > d for s, d in zip(size, shape)):
        raise errors.InvalidArgumentError(
            None, "random_crop", f"random_crop: need size <= shape, got size {size} for shape "
                                 f"{shape}\n{errors.user_line()}")
    if None in shape:
        limit = array_ops.shape(x, out_type=_dtypes.int64) - np.asarray(size, np.int64) + 1
    else:
        limit = convert_to_tensor(np.asarray(shape, np.int64) - np.asarray(size, np.int64) + 1)
    draws = random_ops.uniform([len(size)], 0, np.iinfo(np.int64).max, dtype=_dtypes.int64,
                               seed=seed)
    return indexing_ops.slice_(x, math_ops.floormod(draws, limit), size)
