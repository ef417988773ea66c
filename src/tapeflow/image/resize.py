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
    """Bilinear source indices and weights along one axis (half-pixel centres), in float32 as
    TensorFlow's ResizeBilinear computes them, so results carry TF's bits; cached, as a pipeline
    resizes image after image of the same size (callers must not write to them)."""
    scale = np.float32(n_in) / np.float32(n_out)
    src = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    low = np.floor(src)
    lo = np.maximum(low, 0).astype(np.int64)
    hi = np.minimum(np.ceil(src), n_in - 1).astype(np.int64)
    return lo, hi, (src - low).astype(np.float32)


@jit()
def _lerp_columns(line, x0, x1, wx, ch, out):
    """One image row (flat, float32) interpolated along its width: TF's `l + (r - l) * w`."""
    if ch == 3:   # unrolled: three times faster than the channel loop on RGB rows
        for j in range(x0.shape[0]):
            p, q, f = x0[j] * 3, x1[j] * 3, wx[j]
            a, b, c = line[p], line[p + 1], line[p + 2]
            out[3 * j] = a + (line[q] - a) * f
            out[3 * j + 1] = b + (line[q + 1] - b) * f
            out[3 * j + 2] = c + (line[q + 2] - c) * f
        return
    for j in range(x0.shape[0]):
        p, q, f = x0[j] * ch, x1[j] * ch, wx[j]
        for k in range(ch):
            left = line[p + k]
            out[ch * j + k] = left + (line[q + k] - left) * f


@jit()
def _bilinear_kernel(x, y0, y1, wy, x0, x1, wx, out):
    """Rows interpolated along the width once each, then pairs of them along the height
    (contiguous, so that loop runs in SIMD lanes): the NumPy formula below, same bits."""
    n_in, ch = x.shape[2] * x.shape[3], x.shape[3]
    line = np.empty(n_in, np.float32)
    rows = np.empty((x.shape[1], out.shape[2] * ch), np.float32)
    need = np.zeros(x.shape[1], np.bool_)
    for i in range(out.shape[1]):
        need[y0[i]] = True
        need[y1[i]] = True
    for b in range(out.shape[0]):
        for r in range(x.shape[1]):
            if need[r]:
                src = x[b, r].ravel()
                for t in range(n_in):
                    line[t] = np.float32(src[t])
                _lerp_columns(line, x0, x1, wx, ch, rows[r])
        for i in range(out.shape[1]):
            top, bottom, f = rows[y0[i]], rows[y1[i]], wy[i]
            o = out[b, i].ravel()
            for t in range(o.shape[0]):
                o[t] = top[t] + (bottom[t] - top[t]) * f


def _bilinear(x: np.ndarray, h: int, w: int) -> np.ndarray:
    y0, y1, wy = _axis_weights(x.shape[1], h)
    x0, x1, wx = _axis_weights(x.shape[2], w)
    if _bilinear_kernel is not None and x.dtype in (np.uint8, np.float32):
        out = np.empty((x.shape[0], h, w, x.shape[3]), dtype=np.float32)
        _bilinear_kernel(np.ascontiguousarray(x), y0, y1, wy, x0, x1, wx, out)
        return out
    x = x.astype(np.float32)
    left = x[:, :, x0]
    rows = left + (x[:, :, x1] - left) * wx[None, None, :, None]
    top = rows[:, y0]
    return top + (rows[:, y1] - top) * wy[None, :, None, None]


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
