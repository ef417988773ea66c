"""Training-mode batch normalization over all but the last (channel) axis, and its gradient.

Statistics are accumulated in float64 in one pass (sums of x - s and its square, with s the
first row, so the variance does not cancel badly) and float32 batches of 10^5+ rows keep full
precision. Every pass is memory-bound: the compiled loops read each array once per pass,
allocate nothing the size of the input, and split their rows over the idle cores
(``parallel.split``: each slice its own partial sums, added afterwards).
"""

from __future__ import annotations

import functools

import numpy as np

from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit
from tapeflow.kernels.rows import channel_window


@jit()
def _stats_nb(x2, shift, s1, s2):
    """Per-column sums of d = x - shift and of d*d, added into s1 and s2, x the first
    len(shift) columns of x2 (each kernel here reads x as such a prefix: ``_prefix_rows``)."""
    m, c = x2.shape[0], shift.shape[0]
    for i in range(m):
        for j in range(c):
            d = x2[i, j] - shift[j]
            s1[j] += d
            s2[j] += d * d


# Rows per block of ``_grad_sums_nb``'s partial sums, kept in the data's dtype and added into
# the float64 totals after each block
SUM_BLOCK = 64


@jit()
def _grad_sums_nb(g2, gmap, x2, mean, y2, ab, sum_g, sum_gx):
    """Per-column sums of g and g*(x - mean), g masked as ReluGrad masks it (g*0 where off, so
    a NaN gradient stays NaN): by y2 > 0 if y2 (the ReLU output) has rows, else by
    x*ab[0] + ab[1] > 0 if ab (the forward's coefficients) has rows, else not at all.
    Rows are taken one at a time as 1-D slices and the mask is a float32 select (a float64
    1.0/0.0 factor converted every element), so each row's loop vectorizes. Each block of
    SUM_BLOCK rows is summed in the data's dtype, then added into the float64 totals: float64
    arithmetic on every element (a conversion each) ran the pass 25% slower on W4's shapes.
    If `gmap` has entries, row i of g is g2[gmap[i]] (a pooling's gradient, spread)."""
    m, c = x2.shape[0], mean.shape[0]
    mapped = gmap.shape[0] == m
    zero = np.float32(0.0)
    mu = mean.astype(x2.dtype)
    part_g = np.zeros(c, dtype=x2.dtype)
    part_gx = np.zeros(c, dtype=x2.dtype)
    masked = y2.shape[0] == m
    recomputed = not masked and ab.shape[0] == 2
    a, b = ab[0:1].reshape(-1), ab[1:2].reshape(-1)  # empty unless recomputed
    for i0 in range(0, m, SUM_BLOCK):
        for i in range(i0, min(m, i0 + SUM_BLOCK)):
            gi, xi = g2[gmap[i] if mapped else i], x2[i, :c]
            if masked:
                yi = y2[i]
                for j in range(c):
                    gv = gi[j] if yi[j] > 0 else zero * gi[j]
                    part_g[j] += gv
                    part_gx[j] += gv * (xi[j] - mu[j])
            elif recomputed:
                for j in range(c):
                    xv = xi[j]
                    gv = gi[j] if xv * a[j] + b[j] > 0 else zero * gi[j]
                    part_g[j] += gv
                    part_gx[j] += gv * (xv - mu[j])
            else:
                for j in range(c):
                    gv = gi[j]
                    part_g[j] += gv
                    part_gx[j] += gv * (xi[j] - mu[j])
        for j in range(c):
            sum_g[j] += part_g[j]
            sum_gx[j] += part_gx[j]
            part_g[j] = 0
            part_gx[j] = 0


@jit()
def _affine_nb(x2, a, b, relu, out):
    m, c = x2.shape[0], a.shape[0]
    for i in range(m):
        for j in range(c):
            v = x2[i, j] * a[j] + b[j]
            out[i, j] = v if not relu or v > 0 or v != v else 0.0


@jit()
def _flush_nb(part, sums):
    """Add a block's partial sums into the float64 totals (if there are any) and clear them."""
    if sums.shape[0]:
        for j in range(part.shape[0]):
            sums[j] += part[j]
    part[:] = 0


@jit()
def _affine2_nb(g2, gmap, x2, k, u, v, y2, ab, add2, a0, out, sums):
    """out = g*k + x*u + v per column, g masked as in ``_grad_sums_nb``, plus columns a0.. of
    add2 if it has rows. Each case its own loop, float32 arithmetic on 1-D row slices (the
    column offset a0 taken by slicing, not by a signed index), so each row's loop vectorizes:
    2-6x faster on W4's shapes than indexing the 2-D arrays with a float64 mask factor.
    If `sums` has columns, out's per-column sums are added into it (float64, each block of
    SUM_BLOCK rows summed in out's dtype), summed in the loop that writes out: as fast as the
    loop without them (memory-bound), where a second loop over each block, in cache, cost
    30%. A bias gradient of dx (or of a channel slice of it) is then a slice of these sums
    instead of its own pass over memory (``graph/passes/bias_grad_sums.py``). If `gmap` has
    entries, row i of g is g2[gmap[i]], as in ``_grad_sums_nb``."""
    m, c = x2.shape[0], k.shape[0]
    mapped = gmap.shape[0] == m
    zero = np.float32(0.0)
    part = np.zeros(c, dtype=out.dtype)
    add = add2.shape[0] == m
    if y2.shape[0] == m and add:
        for i in range(m):
            gi, xi, yi = g2[gmap[i] if mapped else i], x2[i, :c], y2[i]
            ai, oi = add2[i, a0:a0 + c], out[i]
            for j in range(c):
                gv = gi[j] if yi[j] > 0 else zero * gi[j]
                o = gv * k[j] + xi[j] * u[j] + v[j] + ai[j]
                oi[j] = o
                part[j] += o
            if i % SUM_BLOCK == SUM_BLOCK - 1:
                _flush_nb(part, sums)
    elif y2.shape[0] == m:
        for i in range(m):
            gi, xi, yi, oi = g2[gmap[i] if mapped else i], x2[i, :c], y2[i], out[i]
            for j in range(c):
                gv = gi[j] if yi[j] > 0 else zero * gi[j]
                o = gv * k[j] + xi[j] * u[j] + v[j]
                oi[j] = o
                part[j] += o
            if i % SUM_BLOCK == SUM_BLOCK - 1:
                _flush_nb(part, sums)
    elif ab.shape[0] == 2 and add:
        a, b = ab[0], ab[1]
        for i in range(m):
            gi, xi, ai, oi = g2[gmap[i] if mapped else i], x2[i, :c], add2[i, a0:a0 + c], out[i]
            for j in range(c):
                xv = xi[j]
                gv = gi[j] if xv * a[j] + b[j] > 0 else zero * gi[j]
                o = gv * k[j] + xv * u[j] + v[j] + ai[j]
                oi[j] = o
                part[j] += o
            if i % SUM_BLOCK == SUM_BLOCK - 1:
                _flush_nb(part, sums)
    elif ab.shape[0] == 2:
        a, b = ab[0], ab[1]
        for i in range(m):
            gi, xi, oi = g2[gmap[i] if mapped else i], x2[i, :c], out[i]
            for j in range(c):
                xv = xi[j]
                gv = gi[j] if xv * a[j] + b[j] > 0 else zero * gi[j]
                o = gv * k[j] + xv * u[j] + v[j]
                oi[j] = o
                part[j] += o
            if i % SUM_BLOCK == SUM_BLOCK - 1:
                _flush_nb(part, sums)
    else:
        for i in range(m):
            gi, xi, oi = g2[gmap[i] if mapped else i], x2[i, :c], out[i]
            for j in range(c):
                o = gi[j] * k[j] + xi[j] * u[j] + v[j]
                oi[j] = o
                part[j] += o
            if i % SUM_BLOCK == SUM_BLOCK - 1:
                _flush_nb(part, sums)
    _flush_nb(part, sums)


@functools.lru_cache(maxsize=32)
def _window_rows(lead: tuple, kh: int, kw: int) -> np.ndarray:
    """For x rows in (n, h, w) order, the row of the (kh, kw)-pooled array whose window holds
    each (cached: W4 reuses two shapes every step)."""
    n, h, w = lead
    if h % kh or w % kw:
        raise ValueError(f"{kh}x{kw} windows do not tile a {h}x{w} image")
    b, r, s = np.meshgrid(np.arange(n), np.arange(h) // kh, np.arange(w) // kw, indexing="ij")
    rows = ((b * (h // kh) + r) * (w // kw) + s).reshape(-1)
    rows.flags.writeable = False
    return rows


def _prefix_rows(x: np.ndarray) -> np.ndarray:
    """x (..., C) as a 2-D array whose first C columns hold it, read in place when x is
    contiguous or a channel prefix of a wider array (a concatenation grown in place), else a
    copy. The kernels index columns from 0: an offset column index is signed, so numba's
    negative-index check stays in the loop and stops it vectorizing (2x slower)."""
    x2, first = channel_window(x)
    return x2 if first == 0 else np.ascontiguousarray(x).reshape(-1, x.shape[-1])


def _affine(x2: np.ndarray, a: np.ndarray, b: np.ndarray, relu: bool = False) -> np.ndarray:
    """x * a + b per column (then max(., 0) if `relu`), x the first len(a) columns of x2, in
    one pass over x when compiled."""
    a, b = a.astype(x2.dtype), b.astype(x2.dtype)
    m, c = x2.shape[0], a.shape[0]
    if _affine_nb is not None:
        out = np.empty((m, c), dtype=x2.dtype)
        parallel.split(m, 2 * out.nbytes,
                       lambda lo, hi: _affine_nb(x2[lo:hi], a, b, relu, out[lo:hi]))
        return out
    out = x2[:, :c] * a
    out += b
    if relu:
        np.maximum(out, 0, out=out)
    return out


def moments(x2: np.ndarray, c: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and (biased) variance of the first `c` columns of a (rows, C) array
    (all of them by default), in float64."""
    m = x2.shape[0]
    c = x2.shape[1] if c is None else c
    if _stats_nb is None:
        x2 = x2[:, :c]
        mean = x2.mean(axis=0, dtype=np.float64)
        d = x2 - mean.astype(x2.dtype)
        return mean, np.einsum("ij,ij->j", d, d, dtype=np.float64) / max(m, 1)
    shift = x2[0, :c].astype(np.float64) if m else np.zeros(c)
    group = _row_group(x2, c)
    wide, shifts = x2, shift
    if group > 1:  # `group` rows as one
        wide, shifts = x2[:m - m % group].reshape(-1, group * c), np.tile(shift, group)

    def sums(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        s1, s2 = np.zeros(group * c), np.zeros(group * c)
        _stats_nb(wide[lo:hi], shifts, s1, s2)
        return s1, s2

    parts = parallel.split(wide.shape[0], m * c * x2.itemsize, sums)
    s1, s2 = sum(p[0] for p in parts), sum(p[1] for p in parts)
    if group > 1:
        s1, s2 = s1.reshape(group, c).sum(axis=0), s2.reshape(group, c).sum(axis=0)
        if m % group:
            _stats_nb(x2[m - m % group:], shift, s1, s2)  # the rows left over
    with np.errstate(invalid="ignore", divide="ignore"):
        d = s1 / m
        var = np.maximum(s2 / m - d * d, 0.0)
    return shift + d, var


def _row_group(x2: np.ndarray, c: int) -> int:
    """Rows of a thin contiguous (rows, c) array that the statistics pass reads as one row of
    at least 48 values: its loop over a row's columns then runs long enough to vectorize
    (a [65536, 12] conv output: 0.59 -> 0.25 ms). 1 for a channel prefix of a wider array,
    for 24+ channels (no gain measured at 16) and for small arrays (the regrouping's fixed
    cost)."""
    if x2.shape[1] != c or not x2.flags.c_contiguous or c >= 24 or x2.size < 1 << 16:
        return 1
    return -(-48 // c)


def _bessel(var: np.ndarray, m: int) -> np.ndarray:
    return var * (m / max(m - 1, 1))


def channel_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, unbiased variance) per channel, in x's dtype: what a batch norm of x returns as
    its statistics, alone (the part of a concatenation's statistics an earlier batch norm of
    the other parts does not know: ``graph/passes/reuse_statistics.py``)."""
    c = x.shape[-1]
    mean, var = moments(_prefix_rows(x), c)
    return mean.astype(x.dtype), _bessel(var, x.size // max(c, 1)).astype(x.dtype)


def statistics(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, epsilon: float,
               given: tuple = ()):
    """(batch mean, unbiased batch variance, 1/sqrt(biased variance + eps), [a, b]) of
    ``forward`` without its normalize pass: for a consumer that applies y = x*a + b itself
    (a convolution reading its input through ``winograd.conv2d(prologue=...)``). `given`:
    x's (mean, unbiased variance), already known (a replay), so x is not read at all."""
    c = x.shape[-1]
    m = x.size // max(c, 1)
    if given:
        mean, unbiased = (np.asarray(v, dtype=np.float64).reshape(c) for v in given)
        var = unbiased * (max(m - 1, 1) / m) if m else unbiased
    else:
        mean, var = moments(_prefix_rows(x), c)
        unbiased = _bessel(var, m)
    inv = 1.0 / np.sqrt(var + epsilon)
    a = scale.astype(np.float64) * inv
    ab = np.stack([a, offset.astype(np.float64) - mean * a]).astype(x.dtype)
    return mean.astype(x.dtype), unbiased.astype(x.dtype), inv.astype(x.dtype), ab


def forward(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, epsilon: float,
            relu: bool = False, coefficients: bool = False, given: tuple = ()):
    """(y, batch mean, unbiased batch variance, 1/sqrt(biased variance + eps)), as TF's
    FusedBatchNorm: y is normalized with the biased variance, while the returned variance has
    Bessel's correction because it feeds the moving average. With `relu`, y is max(y, 0),
    written in the same pass. With `coefficients`, a fifth result: the (2, C) array [a, b]
    in x's dtype with y = x*a + b (before the ReLU) exactly as computed here, from which
    ``backward`` recomputes the ReLU mask instead of reading y. `given`: as ``statistics``."""
    mean, unbiased, inv, ab = statistics(x, scale, offset, epsilon, given)
    y = _affine(_prefix_rows(x), ab[0], ab[1], relu)
    out = (y.reshape(x.shape), mean, unbiased, inv)
    return out + (ab,) if coefficients else out


def affine_relu(x: np.ndarray, ab: np.ndarray) -> np.ndarray:
    """max(x*a + b, 0) per channel, [a, b] = `ab`: ``forward(relu=True)``'s y from its
    coefficients, bit for bit."""
    return _affine(_prefix_rows(x), ab[0], ab[1], True).reshape(x.shape)


def backward(g: np.ndarray, x: np.ndarray, scale: np.ndarray, mean: np.ndarray,
             inv: np.ndarray, relu_out: np.ndarray | None = None,
             addend: np.ndarray | None = None, relu_coefficients: np.ndarray | None = None,
             dx_sums: bool = False, pooled: tuple[int, int] | None = None):
    """(dx, dscale, doffset) of ``forward``'s y given its gradient `g`; with `relu_out` (the
    output of ``forward(relu=True)``) or `relu_coefficients` (its fifth result, which saves
    reading y: one pass fewer each of the two), `g` is the gradient of that output, masked
    here as ReluGrad would, in the same passes. An `addend` (x's shape) is added to dx in its
    pass (another path's gradient of x; only together with a ReLU). With `dx_sums`, a fourth
    result: dx summed over every axis but the channels, in x's dtype (added up as dx is
    written, instead of a later pass that reads dx again). `pooled` (kh, kw): g is the
    gradient of x's (kh, kw) average pool, stride (kh, kw), VALID, windows tiling x exactly
    (AvgPoolGrad's input): each entry's gradient, g / (kh*kw) of its window, is read where it
    is needed instead of from AvgPoolGrad's x-sized output."""
    c = x.shape[-1]
    compiled = _grad_sums_nb is not None
    x2 = _prefix_rows(x) if compiled else np.ascontiguousarray(x).reshape(-1, c)
    g2 = np.ascontiguousarray(g).reshape(-1, c)
    m = x2.shape[0]
    nbytes = x2.shape[0] * c * x2.itemsize  # of each activation-sized operand
    gmap = np.empty(0, dtype=np.int64)
    share = 1.0  # g's factor
    if pooled is not None:
        gmap = _window_rows(x.shape[:-1], *pooled)
        share = 1.0 / (pooled[0] * pooled[1])
        if not compiled:
            g2 = g2[gmap] * g2.dtype.type(share)
            gmap, share = gmap[:0], 1.0
    mean64, inv64 = mean.astype(np.float64), inv.astype(np.float64)
    sum_g, sum_gx = np.zeros(c), np.zeros(c)
    y2 = np.empty((0, c), dtype=x2.dtype)
    ab = np.empty((0, c), dtype=x2.dtype)
    if relu_out is None and relu_coefficients is None:
        if addend is not None:
            raise ValueError("backward: an addend needs a ReLU (relu_out or relu_coefficients)")
    elif relu_out is not None and compiled:
        y2 = np.ascontiguousarray(relu_out).reshape(-1, c)
    elif relu_out is None and compiled:
        ab = np.ascontiguousarray(relu_coefficients, dtype=x2.dtype).reshape(2, c)
    elif relu_out is not None:  # NumPy: mask once, then the unfused formula
        g2 = np.multiply(g2, np.greater(relu_out.reshape(-1, c), 0))
    else:
        ab = relu_coefficients.astype(x2.dtype, copy=False)
        g2 = np.multiply(g2, np.greater(x2 * ab[0] + ab[1], 0))
    if compiled:
        def sums(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
            s_g, s_gx = np.zeros(c), np.zeros(c)
            _grad_sums_nb(g2 if gmap.size else g2[lo:hi], gmap[lo:hi], x2[lo:hi], mean64,
                          y2[lo:hi], ab, s_g, s_gx)
            return s_g, s_gx

        parts = parallel.split(m, (2 + (y2.shape[0] > 0)) * nbytes, sums)
        sum_g[:] = sum(p[0] for p in parts) * share  # exact when kh*kw is a power of 2 (W4: 2x2)
        sum_gx[:] = sum(p[1] for p in parts) * share
    else:
        sum_g[:] = g2.sum(axis=0, dtype=np.float64)
        sum_gx[:] = np.einsum("ij,ij->j", g2, x2 - mean.astype(x.dtype), dtype=np.float64)
    dscale = sum_gx * inv64
    # dx = scale*inv * (g - mean(g) - xhat * mean(g*xhat)), xhat = (x - mean)*inv,
    # folded into dx = g*k + x*u + v with per-channel k, u, v.
    k = scale.astype(np.float64) * inv64
    u = -k * inv64 * inv64 * sum_gx / m
    v = -k * sum_g / m - u * mean64
    k32, u32, v32 = k.astype(x.dtype), u.astype(x.dtype), v.astype(x.dtype)
    if compiled:
        kg = (k * share).astype(x.dtype)  # g*share*k as g*(k*share)
        dx = np.empty_like(x2, shape=(m, c))
        add2, a0 = (y2[:0], 0) if addend is None else channel_window(addend.astype(x2.dtype,
                                                                                    copy=False))

        def write(lo: int, hi: int) -> np.ndarray:
            part = np.zeros(c if dx_sums else 0)
            _affine2_nb(g2 if gmap.size else g2[lo:hi], gmap[lo:hi], x2[lo:hi], kg, u32,
                        v32, y2[lo:hi], ab, add2[lo:hi], a0, dx[lo:hi], part)
            return part

        dx_total = sum(parallel.split(m, 5 * nbytes, write))
    else:
        dx = _affine(x2, u32, v32)
        dx += g2 * k32
        if addend is not None:
            dx += addend.reshape(-1, c)
        dx_total = dx.sum(axis=0, dtype=np.float64) if dx_sums else None
    out = (dx.reshape(x.shape), dscale.astype(scale.dtype), sum_g.astype(scale.dtype))
    return out + (dx_total.astype(x.dtype),) if dx_sums else out
