"""Ops that sample image windows: ``crop_and_resize`` and ``extract_patches``, with gradients.

Each is a primitive (NumPy kernel, shape rule, gradient), since composing them from slices would
cost one op per box or per patch. Their gradients are the adjoint scatter-adds, themselves ops
whose gradients are the forward ops again (both are linear in the image).
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

# --- crop_and_resize --------------------------------------------------------------------------


def _sample_points(lo: float, hi: float, out: int, size: int) -> np.ndarray:
    """Source coordinates of `out` samples between normalized lo and hi (TF's rule)."""
    if out > 1:
        return lo * (size - 1) + np.arange(out) * ((hi - lo) * (size - 1) / (out - 1))
    return np.array([0.5 * (lo + hi) * (size - 1)])


def _box_weights(box: np.ndarray, image_hw: tuple, crop_hw: tuple, method: str) -> list:
    """Per axis: (low index, high index, weight of high, inside mask) for one box."""
    axes = []
    for lo, hi, size, out in ((box[0], box[2], image_hw[0], crop_hw[0]),
                              (box[1], box[3], image_hw[1], crop_hw[1])):
        src = _sample_points(float(lo), float(hi), out, size)
        inside = (src >= 0) & (src <= size - 1)
        src_c = np.clip(src, 0, size - 1)
        if method == "nearest":
            near = np.round(src_c).astype(np.int64)   # std::round: halves away from zero
            near = np.where(src_c - np.floor(src_c) == 0.5, np.ceil(src_c), near).astype(np.int64)
            axes.append((near, near, np.zeros(out), inside))
        else:
            low = np.floor(src_c).astype(np.int64)
            axes.append((low, np.ceil(src_c).astype(np.int64), src_c - low, inside))
    return axes


def _check_boxes(image, boxes, box_indices, crop_size) -> None:
    if image.ndim != 4 or boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"crop_and_resize: image must be [batch, height, width, depth] and boxes "
                         f"[num_boxes, 4], got {list(image.shape)} and {list(boxes.shape)}")
    if box_indices.shape != (boxes.shape[0],):
        raise ValueError(f"crop_and_resize: box_indices must be [num_boxes] = "
                         f"[{boxes.shape[0]}], got {list(box_indices.shape)}")
    bad = (box_indices < 0) | (box_indices >= image.shape[0])
    if bad.any():
        raise ValueError(f"crop_and_resize: box_indices {box_indices[bad].tolist()} out of range "
                         f"[0, {image.shape[0]})")


def _crop_rule(image, boxes, box_indices, *, crop_size, method, extrapolation_value):
    depth = image[0][3] if image[0] is not None else None
    n = boxes[0][0] if boxes[0] is not None else None
    return (n, crop_size[0], crop_size[1], depth), _dtypes.float32


@op("CropAndResize", shape=_crop_rule)
def _crop_and_resize(image, boxes, box_indices, *, crop_size, method, extrapolation_value):
    _check_boxes(image, boxes, box_indices, crop_size)
    out = np.empty((boxes.shape[0], crop_size[0], crop_size[1], image.shape[3]), np.float32)
    for b, (box, idx) in enumerate(zip(boxes, box_indices)):
        (y0, y1, wy, iy), (x0, x1, wx, ix) = _box_weights(box, image.shape[1:3], crop_size,
                                                          method)
        img = image[idx].astype(np.float32)
        top = img[y0][:, x0] + (img[y0][:, x1] - img[y0][:, x0]) * wx[None, :, None]
        bottom = img[y1][:, x0] + (img[y1][:, x1] - img[y1][:, x0]) * wx[None, :, None]
        crop = top + (bottom - top) * wy[:, None, None]
        inside = iy[:, None] & ix[None, :]
        out[b] = np.where(inside[:, :, None], crop, np.float32(extrapolation_value))
    return out


@op("CropAndResizeGradImage", shape=lambda g, boxes, box_indices, like, **attrs: (like[0],
                                                                                  like[1]))
def _crop_and_resize_grad(g, boxes, box_indices, like, *, crop_size, method,
                          extrapolation_value):
    out = np.zeros(like.shape, np.float64)
    for b, (box, idx) in enumerate(zip(boxes, box_indices)):
        (y0, y1, wy, iy), (x0, x1, wx, ix) = _box_weights(box, like.shape[1:3], crop_size,
                                                          method)
        gb = g[b] * (iy[:, None] & ix[None, :])[:, :, None]
        for ys, fy in ((y0, 1 - wy), (y1, wy)):
            for xs, fx in ((x0, 1 - wx), (x1, wx)):
                contrib = gb * (fy[:, None] * fx[None, :])[:, :, None]
                np.add.at(out[idx], (ys[:, None], xs[None, :]), contrib)
    return out.astype(like.dtype)


@_crop_and_resize.def_grad
def _(g, out, image, boxes, box_indices, **attrs):
    return apply(_crop_and_resize_grad, g, boxes, box_indices, image, **attrs), None, None


@_crop_and_resize_grad.def_grad
def _(gg, out, g, boxes, box_indices, like, **attrs):
    from tapeflow.ops import math_ops

    # linear in g: the adjoint is the crop itself, with the constant fill's derivative (zero)
    back = apply(_crop_and_resize, gg, boxes, box_indices, **{**attrs, "extrapolation_value": 0.0})
    return math_ops.cast(back, g.dtype), None, None, None


@export("image.crop_and_resize")
def crop_and_resize(image: Any, boxes: Any, box_indices: Any, crop_size: Any,
                    method: str = "bilinear", extrapolation_value: float = 0.0,
                    name: str | None = None) -> Tensor:
    """Crop each normalized box [y1, x1, y2, x2] of image[box_indices[i]] and resize it to
    `crop_size` by bilinear (or nearest) sampling; samples outside the image get
    `extrapolation_value`. float32 output; differentiable in `image`."""
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"crop_and_resize: method must be 'bilinear' or 'nearest', got "
                         f"{method!r}")
    size = tuple(int(s) for s in np.asarray(
        crop_size.numpy() if hasattr(crop_size, "numpy") else crop_size).reshape(-1))
    if len(size) != 2 or min(size) <= 0:
        raise ValueError(f"crop_and_resize: crop_size must be 2 positive ints, got {size}")
    return apply(_crop_and_resize, convert_to_tensor(image),
                 convert_to_tensor(boxes, dtype=_dtypes.float32),
                 convert_to_tensor(box_indices, dtype=_dtypes.int32), crop_size=size,
                 method=method, extrapolation_value=float(extrapolation_value))


# --- extract_patches --------------------------------------------------------------------------


def _patch_index(shape: tuple, sizes: tuple, strides: tuple, rates: tuple,
                 padding: str) -> np.ndarray:
    """For each output pixel and patch entry, the flat index into one image (-1: padding).

    Shape [out_rows, out_cols, kr * kc * depth]; entries ordered (row, col, depth) as in TF.
    """
    height, width, depth = shape
    grid = []
    for n, k, s, r in ((height, sizes[0], strides[0], rates[0]),
                       (width, sizes[1], strides[1], rates[1])):
        span = k + (k - 1) * (r - 1)
        if padding == "VALID":
            count, before = max(0, (n - span) // s + 1), 0
        else:
            count = -(-n // s)
            before = max(0, (count - 1) * s + span - n) // 2
        starts = np.arange(count) * s - before
        grid.append(starts[:, None] + np.arange(k)[None, :] * r)   # [count, k]
    rows, cols = grid
    valid = ((rows >= 0) & (rows < height))[:, None, :, None] & \
        ((cols >= 0) & (cols < width))[None, :, None, :]
    pixel = rows[:, None, :, None] * width + cols[None, :, None, :]
    pixel = np.where(valid, pixel, -1)                                # [R, C, kr, kc]
    channel = np.arange(depth)
    index = np.where(pixel[..., None] >= 0, pixel[..., None] * depth + channel, -1)
    return index.reshape(len(rows), len(cols), -1)


def _patches_rule(images, *, sizes, strides, rates, padding):
    shape, dtype = images
    if shape is None or any(d is None for d in shape[1:]):
        return None if shape is None else (shape[0], None, None, None), dtype
    index = _patch_index(tuple(shape[1:]), sizes, strides, rates, padding)
    return (shape[0],) + index.shape, dtype


@op("ExtractImagePatches", shape=_patches_rule)
def _extract_patches(images, *, sizes, strides, rates, padding):
    index = _patch_index(images.shape[1:], sizes, strides, rates, padding)
    flat = images.reshape(images.shape[0], -1)
    padded = np.concatenate([flat, np.zeros((flat.shape[0], 1), flat.dtype)], axis=1)
    return padded[:, np.where(index >= 0, index, flat.shape[1])]


@op("ExtractImagePatchesGrad", shape=lambda g, like, **attrs: (like[0], g[1]))
def _extract_patches_grad(g, like, *, sizes, strides, rates, padding):
    index = _patch_index(like.shape[1:], sizes, strides, rates, padding).reshape(-1)
    keep = index >= 0
    per_image = int(np.prod(like.shape[1:]))
    out = np.empty((like.shape[0], per_image), g.dtype)
    for b in range(like.shape[0]):
        out[b] = np.bincount(index[keep], weights=g[b].reshape(-1)[keep], minlength=per_image)
    return out.reshape(like.shape)


@_extract_patches.def_grad
def _(g, out, images, **attrs):
    return apply(_extract_patches_grad, g, images, **attrs)


@_extract_patches_grad.def_grad
def _(gg, out, g, like, **attrs):
    return apply(_extract_patches, gg, **attrs), None


def _four(value: Any, arg: str) -> tuple[int, int]:
    v = [int(x) for x in value]
    if len(v) != 4 or v[0] != 1 or v[3] != 1 or min(v) < 1:
        raise ValueError(f"extract_patches: {arg} must be [1, rows, cols, 1] with positive "
                         f"entries, got {list(value)}")
    return v[1], v[2]


@export("image.extract_patches")
def extract_patches(images: Any, sizes: Any, strides: Any, rates: Any, padding: str,
                    name: str | None = None) -> Tensor:
    """Patches of `sizes` every `strides`, sampled `rates` apart, flattened into the depth axis:
    [batch, out_rows, out_cols, rows * cols * depth]."""
    x = convert_to_tensor(images)
    if x.shape.rank != 4:
        raise errors.InvalidArgumentError(
            None, "ExtractImagePatches", f"extract_patches: images must be [batch, rows, cols, "
                                         f"depth], got shape {x.shape.as_list()}\n"
                                         f"{errors.user_line()}")
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise ValueError(f"extract_patches: padding must be 'VALID' or 'SAME', got {padding!r}")
    return apply(_extract_patches, x, sizes=_four(sizes, "sizes"),
                 strides=_four(strides, "strides"), rates=_four(rates, "rates"), padding=padding)
