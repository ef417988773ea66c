"""2-D max and average pooling on NHWC arrays, and their gradients.

With numba (and float32/float64 data) each kernel is one compiled pass: the forward kernels
loop over the output windows, reading each window's entries once. When windows are disjoint
(window <= stride and no padding, as in VALID 2x2/2 pools, where odd sizes drop the last row
and column) the gradient kernels walk dx in memory order and write each entry exactly once,
zeros included, instead of zeroing dx and adding into it; overlapping or padded windows add
into a zeroed dx. Without numba (or for other dtypes) each kernel loops over the window's taps
and does one vectorized NumPy pass over a strided view per tap. Both paths route a max-pool
gradient the same way: to the first tap, in row-major window order, equal to the window's
maximum (as TF); a window whose maximum is NaN equals no tap, so its gradient is dropped.
"""
from __future__ import annotations

import numpy as np

from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit
from tapeflow.kernels.conv import Geometry, _window, pad

_COMPILED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _compiled(fn, *arrays: np.ndarray) -> bool:
    """Whether the numba loop `fn` exists and takes these arrays (one float32/64 dtype)."""
    dtype = arrays[0].dtype
    return fn is not None and dtype in _COMPILED_DTYPES and all(a.dtype == dtype for a in arrays)


def _disjoint(g: Geometry) -> bool:
    """Whether each input entry lies in at most one window (window <= stride, no padding)."""
    return not g.padded and g.kh <= g.sh and g.kw <= g.sw


def _crop(xp: np.ndarray, g: Geometry) -> np.ndarray:
    return np.ascontiguousarray(xp[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w])


# --- compiled loops (numba): arrays come in as (N*H*W, C) rows ----------------------------------


@jit()
def _max_pool_nb(x2, n, h, w, ho, wo, kh, kw, sh, sw, pt, pl, out2):
    """out = max over each window's valid taps (-inf if none), NaN if any tap is NaN; on a
    tie the later tap's value is kept, as np.maximum does (it only shows in the sign of 0).

    The running max alternates between two scratch rows: updated in place, LLVM turns the
    select into a masked store (vmaskmovps), which made this loop 2x slower on AMD EPYC."""
    c = x2.shape[1]
    run = np.empty((2, c), dtype=x2.dtype)
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                cur = 0
                for ch in range(c):
                    run[0, ch] = -np.inf
                for a in range(kh):
                    r = i * sh - pt + a
                    if r < 0 or r >= h:
                        continue
                    for q in range(kw):
                        col = j * sw - pl + q
                        if col < 0 or col >= w:
                            continue
                        s = (b * h + r) * w + col
                        src, dst = run[cur], run[1 - cur]
                        for ch in range(c):
                            m, v = src[ch], x2[s, ch]
                            dst[ch] = m if (m > v) | (m != m) else v
                        cur = 1 - cur
                o = (b * ho + i) * wo + j
                for ch in range(c):
                    out2[o, ch] = run[cur, ch]


@jit()
def _max_pool_grad_nb(x2, out2, gr2, n, h, w, ho, wo, kh, kw, sh, sw, pt, pl, dx2):
    """dx2 (zeroed) += gr at each window's first tap equal to its max, taps in row-major order;
    a padding tap counts as -inf, so it takes (and drops) the gradient if it comes first."""
    c = x2.shape[1]
    taken = np.empty(c, dtype=np.int32)  # per channel: has a tap of this window matched yet?
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                o = (b * ho + i) * wo + j
                for ch in range(c):
                    taken[ch] = 0
                for a in range(kh):
                    r = i * sh - pt + a
                    for q in range(kw):
                        col = j * sw - pl + q
                        if r < 0 or r >= h or col < 0 or col >= w:
                            for ch in range(c):
                                taken[ch] |= out2[o, ch] == -np.inf
                            continue
                        s = (b * h + r) * w + col
                        for ch in range(c):
                            hit = (x2[s, ch] == out2[o, ch]) & (taken[ch] == 0)
                            dx2[s, ch] += gr2[o, ch] if hit else 0.0
                            taken[ch] |= hit


@jit()
def _max_pool_grad_disjoint_nb(x2, out2, gr2, n, h, w, ho, wo, kh, kw, sh, sw, dx2):
    """``_max_pool_grad_nb`` for disjoint windows (window <= stride, no padding), writing each
    entry of an uninitialized dx2 once, in memory order: the gradient, or 0 for the other taps,
    for the rows/columns VALID drops and for the gaps when stride > window."""
    c = x2.shape[1]
    taken = np.empty((wo, c), dtype=np.int32)  # per window of the current output row
    for b in range(n):
        for r in range(h):
            i, a = r // sh, r % sh
            s0 = (b * h + r) * w
            if i >= ho or a >= kh:
                for s in range(s0, s0 + w):
                    for ch in range(c):
                        dx2[s, ch] = 0.0
                continue
            if a == 0:
                taken[:] = 0
            for j in range(wo):
                o = (b * ho + i) * wo + j
                for col in range(j * sw, min(j * sw + sw, w)):
                    s = s0 + col
                    if col - j * sw >= kw:
                        for ch in range(c):
                            dx2[s, ch] = 0.0
                        continue
                    for ch in range(c):
                        hit = (x2[s, ch] == out2[o, ch]) & (taken[j, ch] == 0)
                        dx2[s, ch] = gr2[o, ch] if hit else 0.0
                        taken[j, ch] |= hit
            for s in range(s0 + min(wo * sw, w), s0 + w):
                for ch in range(c):
                    dx2[s, ch] = 0.0


@jit()
def _avg_pool_nb(x2, n, h, w, ho, wo, kh, kw, sh, sw, pt, pl, out2):
    """out = sum of each window's valid taps / their count (NaN for a window of padding only)."""
    c = x2.shape[1]
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                o = (b * ho + i) * wo + j
                for ch in range(c):
                    out2[o, ch] = 0.0
                count = 0
                for a in range(kh):
                    r = i * sh - pt + a
                    if r < 0 or r >= h:
                        continue
                    for q in range(kw):
                        col = j * sw - pl + q
                        if col < 0 or col >= w:
                            continue
                        count += 1
                        s = (b * h + r) * w + col
                        for ch in range(c):
                            out2[o, ch] += x2[s, ch]
                if count == 0:
                    for ch in range(c):
                        out2[o, ch] = np.nan
                    continue
                den = float(count)
                for ch in range(c):
                    out2[o, ch] /= den


@jit()
def _avg_pool_grad_nb(gr2, n, h, w, ho, wo, kh, kw, sh, sw, pt, pl, dx2):
    """dx2 (zeroed) += gr shared evenly over each window's valid taps."""
    c = gr2.shape[1]
    share = np.empty(c, dtype=gr2.dtype)
    for b in range(n):
        for i in range(ho):
            r0, r1 = max(i * sh - pt, 0), min(i * sh - pt + kh, h)
            for j in range(wo):
                c0, c1 = max(j * sw - pl, 0), min(j * sw - pl + kw, w)
                if r1 <= r0 or c1 <= c0:
                    continue
                den = float((r1 - r0) * (c1 - c0))
                o = (b * ho + i) * wo + j
                for ch in range(c):
                    share[ch] = gr2[o, ch] / den
                for r in range(r0, r1):
                    for s in range((b * h + r) * w + c0, (b * h + r) * w + c1):
                        for ch in range(c):
                            dx2[s, ch] += share[ch]


@jit()
def _avg_pool_grad_disjoint_nb(gr2, n, h, w, ho, wo, kh, kw, sh, sw, dx2):
    """``_avg_pool_grad_nb`` for disjoint windows, writing each entry of an uninitialized dx2
    once, in memory order (0 where no window covers it, as in the max-pool case)."""
    c = gr2.shape[1]
    share = np.empty((wo, c), dtype=gr2.dtype)  # gr / taps for the current output row
    den = float(kh * kw)
    for b in range(n):
        for r in range(h):
            i, a = r // sh, r % sh
            s0 = (b * h + r) * w
            if i >= ho or a >= kh:
                for s in range(s0, s0 + w):
                    for ch in range(c):
                        dx2[s, ch] = 0.0
                continue
            if a == 0:
                for j in range(wo):
                    for ch in range(c):
                        share[j, ch] = gr2[(b * ho + i) * wo + j, ch] / den
            for j in range(wo):
                for col in range(j * sw, min(j * sw + sw, w)):
                    s = s0 + col
                    if col - j * sw >= kw:
                        for ch in range(c):
                            dx2[s, ch] = 0.0
                        continue
                    for ch in range(c):
                        dx2[s, ch] = share[j, ch]
            for s in range(s0 + min(wo * sw, w), s0 + w):
                for ch in range(c):
                    dx2[s, ch] = 0.0


def _rows(a: np.ndarray) -> np.ndarray:
    """(N*H*W, C) view of an NHWC array; a copy only if it is not C-contiguous (never for the
    fresh outputs the kernels write into)."""
    n, h, w, c = a.shape
    return np.ascontiguousarray(a).reshape(n * h * w, c)


def _by_images(*arrays_and_kernel) -> None:
    """kernel(*arrays) on slices of the images (axis 0 of every array), one per idle core:
    each image's windows read and write only that image."""
    *arrays, kernel = arrays_and_kernel
    parallel.split(arrays[0].shape[0], sum(a.nbytes for a in arrays),
                   lambda lo, hi: kernel(*(a[lo:hi] for a in arrays)))


def _sizes(n: int, g: Geometry) -> tuple[int, ...]:
    return n, g.h, g.w, g.ho, g.wo, g.kh, g.kw, g.sh, g.sw


# --- kernels -------------------------------------------------------------------------------------


def max_pool(x: np.ndarray, g: Geometry) -> np.ndarray:
    """Maximum over each window; padding never wins (it is -inf)."""
    if _compiled(_max_pool_nb, x):
        out = np.empty((x.shape[0], g.ho, g.wo, x.shape[3]), dtype=x.dtype)
        _by_images(x, out, lambda xs, o: _max_pool_nb(_rows(xs), *_sizes(xs.shape[0], g),
                                                        g.pt, g.pl, _rows(o)))
        return out
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


def max_pool_grad(x: np.ndarray, out: np.ndarray, gr: np.ndarray, g: Geometry) -> np.ndarray:
    """Route each window's gradient to its (first) maximum, as TF does."""
    if _compiled(_max_pool_grad_nb, x, out, gr):
        if _disjoint(g):
            dx = np.empty(x.shape, dtype=gr.dtype)
            _by_images(dx, x, out, gr, lambda d, xs, o, gs: _max_pool_grad_disjoint_nb(
                _rows(xs), _rows(o), _rows(gs), *_sizes(xs.shape[0], g), _rows(d)))
        else:
            dx = np.zeros(x.shape, dtype=gr.dtype)
            _by_images(dx, x, out, gr, lambda d, xs, o, gs: _max_pool_grad_nb(
                _rows(xs), _rows(o), _rows(gs), *_sizes(xs.shape[0], g), g.pt, g.pl, _rows(d)))
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
    if _compiled(_avg_pool_nb, x):
        out = np.empty((x.shape[0], g.ho, g.wo, x.shape[3]), dtype=x.dtype)
        _by_images(x, out, lambda xs, o: _avg_pool_nb(_rows(xs), *_sizes(xs.shape[0], g),
                                                        g.pt, g.pl, _rows(o)))
        return out
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
    n, c = gr.shape[0], gr.shape[3]
    if _compiled(_avg_pool_grad_nb, gr):
        if _disjoint(g):
            dx = np.empty((n, g.h, g.w, c), dtype=gr.dtype)
            _by_images(dx, gr, lambda d, gs: _avg_pool_grad_disjoint_nb(
                _rows(gs), *_sizes(gs.shape[0], g), _rows(d)))
        else:
            dx = np.zeros((n, g.h, g.w, c), dtype=gr.dtype)
            _by_images(dx, gr, lambda d, gs: _avg_pool_grad_nb(
                _rows(gs), *_sizes(gs.shape[0], g), g.pt, g.pl, _rows(d)))
        return dx
    if tiles(g):
        dx = np.empty((n, g.h, g.w, c), dtype=gr.dtype)
        _tiled(dx, g)[...] = (gr * gr.dtype.type(1.0 / g.taps))[:, :, None, :, None, :]
        return dx
    share = gr / _valid_counts(g, gr.dtype)
    dxp = np.zeros((n, g.h + g.pt + g.pb, g.w + g.pl + g.pr, c), dtype=gr.dtype)
    for a in range(g.kh):
        for b in range(g.kw):
            _window(dxp, a, b, g)[...] += share
    return _crop(dxp, g)
