"""`tf.image.resize` (TF2 semantics: half-pixel centres, float32 output) and simple helpers."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.data import structure
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.tensor import EagerTensor, wrap


class ResizeMethod:
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"


def _axis_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear source indices and weights along one axis (half-pixel centres)."""
    scale = n_in / n_out
    src = np.clip((np.arange(n_out) + 0.5) * scale - 0.5, 0, n_in - 1)
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, (src - lo).astype(np.float32)


def _bilinear(x: np.ndarray, h: int, w: int) -> np.ndarray:
    y0, y1, wy = _axis_weights(x.shape[1], h)
    x0, x1, wx = _axis_weights(x.shape[2], w)
    top = x[:, y0] * (1 - wy)[None, :, None, None] + x[:, y1] * wy[None, :, None, None]
    return top[:, :, x0] * (1 - wx)[None, None, :, None] + top[:, :, x1] * wx[None, None, :, None]


def _nearest(x: np.ndarray, h: int, w: int) -> np.ndarray:
    ys = np.minimum(np.floor((np.arange(h) + 0.5) * x.shape[1] / h), x.shape[1] - 1).astype(int)
    xs = np.minimum(np.floor((np.arange(w) + 0.5) * x.shape[2] / w), x.shape[2] - 1).astype(int)
    return x[:, ys][:, :, xs]


def _pillow(x: np.ndarray, h: int, w: int, method: str) -> np.ndarray:
    from PIL import Image

    resample = {"bicubic": Image.BICUBIC, "area": Image.BOX, "lanczos3": Image.LANCZOS}[method]
    out = np.empty((x.shape[0], h, w, x.shape[3]), dtype=np.float32)
    for b in range(x.shape[0]):
        for c in range(x.shape[3]):
            img = Image.fromarray(x[b, :, :, c].astype(np.float32), mode="F")
            out[b, :, :, c] = np.asarray(img.resize((w, h), resample))
    return out


def resize(images: Any, size: Any, method: str = ResizeMethod.BILINEAR,
           preserve_aspect_ratio: bool = False, antialias: bool = False,
           name: str | None = None) -> EagerTensor:
    """Resize [h, w, c] or [batch, h, w, c] images to `size` = (height, width)."""
    x = structure.to_array(images)
    if x.ndim not in (3, 4):
        raise errors.InvalidArgumentError(
            f"resize: images must be [h, w, c] or [batch, h, w, c], got {list(x.shape)}\n"
            f"{errors.user_line()}")
    h, w = (int(v) for v in structure.to_array(size).ravel())
    batched = x if x.ndim == 4 else x[None]
    if preserve_aspect_ratio:
        scale = min(h / batched.shape[1], w / batched.shape[2])
        h, w = max(1, round(batched.shape[1] * scale)), max(1, round(batched.shape[2] * scale))
    method = str(method).lower()
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        out = _nearest(batched, h, w)
    elif method == ResizeMethod.BILINEAR:
        out = _bilinear(batched.astype(np.float32), h, w).astype(np.float32)
    elif method in ("bicubic", "area", "lanczos3"):
        out = _pillow(batched, h, w, method)
    else:
        raise errors.InvalidArgumentError(f"resize: unknown method {method!r}")
    return wrap(out if x.ndim == 4 else out[0])


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> EagerTensor:
    """Scale between integer ranges and [0, 1] floats, as TF does."""
    x = structure.to_array(image)
    target = _dtypes.as_dtype(dtype)
    src_int, dst_int = x.dtype.kind in "iu", target.is_integer
    if src_int and not dst_int:
        out = x.astype(target._np) / np.iinfo(x.dtype).max
    elif not src_int and dst_int:
        out = np.clip(x * (np.iinfo(target._np).max + 0.5), 0, np.iinfo(target._np).max)
    elif src_int and dst_int:
        out = x.astype(np.float64) * (np.iinfo(target._np).max / np.iinfo(x.dtype).max)
    else:
        out = x
    return wrap(np.asarray(out).astype(target._np))


def flip_left_right(image: Any) -> EagerTensor:
    """Mirror the width axis."""
    return wrap(np.ascontiguousarray(np.flip(structure.to_array(image), axis=-2)))


def flip_up_down(image: Any) -> EagerTensor:
    """Mirror the height axis."""
    return wrap(np.ascontiguousarray(np.flip(structure.to_array(image), axis=-3)))
