"""2-D max and average pooling on NHWC arrays, and their gradients.

Each kernel loops over the window's taps (4 for a 2x2 pool) and does one vectorized pass over
a strided view per tap, so the work is a handful of full-array NumPy operations.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit
from tapeflow.kernels.conv import Geometry, _window, pad


def _crop(xp: np.ndarray, g: Geometry) -> np.ndarray:
    return np.ascontiguousarray(xp[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w])


def max_pool(x: np.ndarray, g: Geometry) -> np.ndarray:
    """Maximum over each window; padding never wins (it is -inf)."""
    xp = pad(x, g, -np.inf)
    out = _window(xp, 0, 0, g).copy()
    for a in range(g.kh):
        for b in range(g.kw):
            if a or b:
                np.maximum(out, _window(xp, a, b, g), out=out)
    return out


def _first_max_masks(x: np.ndarray, out: np.ndarray, g: Geometry):
    """Yield (tap, mask) where mask marks windows whose first maximum sits at that tap."""
    xp = pad(x, g, -np.inf)
    taken = np.zeros(out.shape, dtype=bool)
    for a in range(g.kh):
        for b in range(g.kw):
            hit = _window(xp, a, b, g) == out
            hit &= ~taken
            taken |= hit
            yield (a, b), hit


@jit()
def _max_pool_grad_nb(x, gr, kh, kw, sh, sw, pt, pl, dx):
    """dx[first max of each window] += gr, windows scanned tap by tap (row-major) as TF."""
    n, h, w, c = x.shape
    ho, wo = gr.shape[1], gr.shape[2]
    best = np.empty(c, dtype=x.dtype)
    at = np.empty(c, dtype=np.int64)
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                at[:] = -1
                for a in range(kh):
                    r = i * sh - pt + a
                    if r < 0 or r >= h:
                        continue
                    for q in range(kw):
                        col = j * sw - pl + q
                        if col < 0 or col >= w:
                            continue
                        pos = r * w + col
                        for ch in range(c):
                            v = x[b, r, col, ch]
                            if at[ch] < 0 or v > best[ch]:
                                best[ch] = v
                                at[ch] = pos
                for ch in range(c):
                    if at[ch] >= 0:
                        dx[b, at[ch] // w, at[ch] % w, ch] += gr[b, i, j, ch]


def max_pool_grad(x: np.ndarray, out: np.ndarray, gr: np.ndarray, g: Geometry) -> np.ndarray:
    """Route each window's gradient to its (first) maximum, as TF does."""
    if _max_pool_grad_nb is not None and not np.isnan(out).any():
        dx = np.zeros(x.shape, dtype=gr.dtype)
        _max_pool_grad_nb(x, gr, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, dx)
        return dx
    dxp = np.zeros((x.shape[0], g.h + g.pt + g.pb, g.w + g.pl + g.pr, x.shape[3]), gr.dtype)
    for (a, b), hit in _first_max_masks(x, out, g):
        _window(dxp, a, b, g)[...] += np.where(hit, gr, 0)
    return _crop(dxp, g)


def max_pool_grad_grad(x: np.ndarray, out: np.ndarray, gx: np.ndarray,
                       g: Geometry) -> np.ndarray:
    """Pick `gx` (shaped like x) at each window's maximum: the adjoint of ``max_pool_grad``."""
    gxp = pad(gx, g)
    res = np.zeros(out.shape, dtype=gx.dtype)
    for (a, b), hit in _first_max_masks(x, out, g):
        np.copyto(res, _window(gxp, a, b, g), where=hit)
    return res


def _valid_counts(g: Geometry, dtype: np.dtype) -> np.ndarray:
    """How many non-padding entries each window covers (TF's SAME average divides by it)."""
    ones = pad(np.ones((1, g.h, g.w, 1), dtype=dtype), g)
    count = np.zeros((1, g.ho, g.wo, 1), dtype=dtype)
    for a in range(g.kh):
        for b in range(g.kw):
            count += _window(ones, a, b, g)
    return count


def tiles(g: Geometry) -> bool:
    """Whether the windows tile the input exactly (window == stride, no padding, no remainder),
    as in DenseNet's 2x2 transitions: then every entry sits in exactly one window."""
    return (not g.padded and (g.kh, g.kw) == (g.sh, g.sw)
            and (g.h, g.w) == (g.ho * g.sh, g.wo * g.sw))


def _tiled(a: np.ndarray, g: Geometry) -> np.ndarray:
    """(N, Ho, kh, Wo, kw, C) view of an (N, H, W, C) array whose windows tile it."""
    return a.reshape(a.shape[0], g.ho, g.kh, g.wo, g.kw, a.shape[3])


def avg_pool(x: np.ndarray, g: Geometry) -> np.ndarray:
    """Mean over the valid (non-padding) entries of each window."""
    if tiles(g):
        return _tiled(x, g).mean(axis=(2, 4), dtype=x.dtype)
    xp = pad(x, g)
    out = _window(xp, 0, 0, g).copy()
    for a in range(g.kh):
        for b in range(g.kw):
            if a or b:
                out += _window(xp, a, b, g)
    out /= _valid_counts(g, x.dtype)
    return out


def avg_pool_grad(gr: np.ndarray, g: Geometry) -> np.ndarray:
    """Spread each window's gradient evenly over its valid entries."""
    if tiles(g):
        dx = np.empty((gr.shape[0], g.h, g.w, gr.shape[3]), dtype=gr.dtype)
        _tiled(dx, g)[...] = (gr * gr.dtype.type(1.0 / g.taps))[:, :, None, :, None, :]
        return dx
    share = gr / _valid_counts(g, gr.dtype)
    n, c = gr.shape[0], gr.shape[3]
    dxp = np.zeros((n, g.h + g.pt + g.pb, g.w + g.pl + g.pr, c), dtype=gr.dtype)
    for a in range(g.kh):
        for b in range(g.kw):
            _window(dxp, a, b, g)[...] += share
    return _crop(dxp, g)
