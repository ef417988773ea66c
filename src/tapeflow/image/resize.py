"""`tf.image.resize` (TF2 semantics: half-pixel centres; float32 output but for nearest).

One op per method, so resizing traces and runs in graphs; bilinear and nearest-neighbour have
gradients (their adjoints scatter the output gradient back through the same weights).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.kernels._jit import jit
from tapeflow.ops import array_ops


class ResizeMethod:
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"


@functools.lru_cache(maxsize=64)
def _axis_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear source indices and weights along one axis (half-pixel centres); cached, as a
    pipeline resizes image after image of the same size (callers must not write to them)."""
    scale = n_in / n_out
    src = np.clip((np.arange(n_out) + 0.5) * scale - 0.5, 0, n_in - 1)
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, (src - lo).astype(np.float32)


@jit()
def _bilinear_kernel(x, y0, y1, wy, x0, x1, wx, out):
    """The NumPy formula below, element by element in float32 (same roundings, same bits)."""
    one = np.float32(1)
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            a, c, fy = y0[i], y1[i], wy[i]
            gy = one - fy
            for j in range(out.shape[2]):
                p, q, fx = x0[j], x1[j], wx[j]
                gx = one - fx
                for k in range(out.shape[3]):
                    left = np.float32(x[b, a, p, k]) * gy + np.float32(x[b, c, p, k]) * fy
                    right = np.float32(x[b, a, q, k]) * gy + np.float32(x[b, c, q, k]) * fy
                    out[b, i, j, k] = left * gx + right * fx


def _bilinear(x: np.ndarray, h: int, w: int) -> np.ndarray:
    y0, y1, wy = _axis_weights(x.shape[1], h)
    x0, x1, wx = _axis_weights(x.shape[2], w)
    if _bilinear_kernel is not None and x.dtype in (np.uint8, np.float32):
        out = np.empty((x.shape[0], h, w, x.shape[3]), dtype=np.float32)
        _bilinear_kernel(np.ascontiguousarray(x), y0, y1, wy, x0, x1, wx, out)
        return out
    x = x.astype(np.float32)
    top = x[:, y0] * (1 - wy)[None, :, None, None] + x[:, y1] * wy[None, :, None, None]
    return top[:, :, x0] * (1 - wx)[None, None, :, None] + top[:, :, x1] * wx[None, None, :, None]


def _nearest_index(n_in: int, n_out: int) -> np.ndarray:
    return np.minimum(np.floor((np.arange(n_out) + 0.5) * n_in / n_out), n_in - 1).astype(int)


def _nearest(x: np.ndarray, h: int, w: int) -> np.ndarray:
    return x[:, _nearest_index(x.shape[1], h)][:, :, _nearest_index(x.shape[2], w)]


def _pillow(x: np.ndarray, h: int, w: int, method: str) -> np.ndarray:
    from PIL import Image

    resample = {"bicubic": Image.BICUBIC, "area": Image.BOX, "lanczos3": Image.LANCZOS}[method]
    out = np.empty((x.shape[0], h, w, x.shape[3]), dtype=np.float32)
    for b in range(x.shape[0]):
        for c in range(x.shape[3]):
            img = Image.fromarray(x[b, :, :, c].astype(np.float32), mode="F")
            out[b, :, :, c] = np.asarray(img.resize((w, h), resample))
    return out



def _resized_rule(images, *, size, method):
    shape, dtype = images
    batch, depth = (None, None) if shape is None else (shape[0], shape[3])
    return (batch, size[0], size[1], depth), (dtype if method == "nearest" else _dtypes.float32)


@op("ResizeImages", shape=_resized_rule)
def _resize(images, *, size, method):
    h, w = size
    if method == "nearest":
        return _nearest(images, h, w)
    if method == "bilinear":
        return _bilinear(images, h, w).astype(np.float32, copy=False)
    return _pillow(images, h, w, method)


@op("ResizeImagesGrad", shape=lambda g, like, *, size, method: (like[0], g[1]))
def _resize_grad(g, like, *, size, method):
    """The adjoint of the linear resize: each output gradient goes back to its sources."""
    _, h_in, w_in, _ = like.shape
    out = np.zeros((like.shape[0], h_in, w_in, like.shape[3]), np.float64)
    if method == "nearest":
        ys, xs = _nearest_index(h_in, size[0]), _nearest_index(w_in, size[1])
        np.add.at(out, (slice(None), ys[:, None], xs[None, :]), g)
        return out.astype(g.dtype)
    y0, y1, wy = _axis_weights(h_in, size[0])
    x0, x1, wx = _axis_weights(w_in, size[1])
    for ys, fy in ((y0, 1 - wy), (y1, wy)):
        for xs, fx in ((x0, 1 - wx), (x1, wx)):
            part = g * (fy[:, None] * fx[None, :])[None, :, :, None]
            np.add.at(out, (slice(None), ys[:, None], xs[None, :]), part)
    return out.astype(g.dtype)


@_resize.def_grad
def _(g, out, images, *, size, method):
    if method not in ("bilinear", "nearest"):
        return None   # as in TF 2: no gradient through the Pillow-backed filters
    return apply(_resize_grad, g, images, size=size, method=method)


@_resize_grad.def_grad
def _(gg, out, g, like, *, size, method):
    return apply(_resize, gg, size=size, method=method), None


def resize(images: Any, size: Any, method: str = ResizeMethod.BILINEAR,
           preserve_aspect_ratio: bool = False, antialias: bool = False,
           name: str | None = None) -> Tensor:
    """Resize [h, w, c] or [batch, h, w, c] images to `size` = (height, width)."""
    x = convert_to_tensor(images)
    rank = x.shape.rank
    if rank not in (3, 4):
        raise errors.InvalidArgumentError(
            None, "resize", f"resize: images must be [h, w, c] or [batch, h, w, c], got shape "
                            f"{x.shape.as_list() if rank is not None else None}\n"
                            f"{errors.user_line()}")
    h, w = (int(v) for v in np.asarray(size.numpy() if hasattr(size, "numpy") else size).ravel())
    if preserve_aspect_ratio:
        in_h, in_w = x.shape.as_list()[-3:-1]
        scale = min(h / in_h, w / in_w)
        h, w = max(1, round(in_h * scale)), max(1, round(in_w * scale))
    method = str(method).lower()
    if method not in ("bilinear", "nearest", "bicubic", "area", "lanczos3"):
        raise errors.InvalidArgumentError(
            None, "resize", f"resize: unknown method {method!r}\n{errors.user_line()}")
    batched = x if rank == 4 else array_ops.expand_dims(x, 0)
    out = apply(_resize, batched, size=(h, w), method=method)
    return out if rank == 4 else array_ops.squeeze(out, [0])
