"""Winograd convolution, F(2x2, 3x3) and F(4x4, 3x3), for 3x3 stride-1 NHWC convolutions.

Why: the 3x3 convolutions of the CIFAR CNN are GEMM-bound, and OpenBLAS's single-threaded
SGEMM is slow here. Winograd's minimal filtering computes an m x m output tile from an
(m+2) x (m+2) input tile with (m+2)^2 products per (input, output) channel pair instead of
9 m^2: 2.25x fewer multiplications for m = 2, 4x fewer for m = 4. The products become
(m+2)^2 matrix products [tiles, Cin] x [Cin, Cout], one per position of the transformed tile.

    V = B^T d B        input tiles (numba loops)
    U = G w G^T        filter, once per call
    M[p] = V[p] @ U[p] for each tile position p (BLAS)
    Y = A^T M A        output tiles (numba loops); a partial last tile is clipped

The filter gradient reuses the input tiles: dU[p] = sum over tiles of V[p]^T (A dY A^T)[p],
one product per position with the tiles as the long inner dimension, then dW = G^T dU G.

F(4x4, 3x3) is the default: its float32 error stays below 1e-5 of the output's scale on the
W4/W5 layers (F(2x2) ~3e-7, im2col ~5e-7), and it was faster than F(2x2) on every W5 layer
(fewer, larger products; about the same transform cost per output pixel).

Transform matrices from Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks"
(2015), interpolation points 0, 1, -1 (m = 2) and 0, 1, -1, 2, -2 (m = 4), each with infinity.

The transforms are written as long unit-stride loops over a whole row of tiles at once (all
channels of all tiles in the row): numba/LLVM vectorizes such a loop, while a per-tile loop over
the channels with all (m+2)^2 loads and stores stayed scalar (LLVM cannot prove that the arrays
do not overlap and gives up on that many run-time checks). To make a row of tiles contiguous,
the padded input is stored with its columns split by phase (column mod m). F(4x4) uses
hand-written loops (``_bt6_lines``, ``_at6_lines``, ``_a6_lines``); any other tile size the
generic sparse-matrix loop ``_combine``.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tapeflow.framework.threads import single_threaded_blas
from tapeflow.kernels import conv, parallel
from tapeflow.kernels._jit import jit

# Bytes of transformed tiles and products per chunk of images. Measured one layer at a time
# (2026-11-23, 1 MB of L2 per core): 2 MB was as fast as 4 MB or up to 15% faster on the W4,
# W5 and RevNet layers, forward and filter gradient; 1 MB and below lose on the wider layers
# (per-chunk Python and BLAS call overhead)
CHUNK_BYTES = 1 << 21


@dataclass(frozen=True, eq=False)
class Variant:
    """One tile size: m output pixels per tile side and its three transform matrices."""

    tile: int
    bt: np.ndarray  # (m+2, m+2): input transform B^T
    g: np.ndarray  # (m+2, 3): filter transform G
    at: np.ndarray  # (m, m+2): output transform A^T
    hand: bool = False  # transforms by the hand-written F(4x4) loops instead of the matrices

    @property
    def span(self) -> int:
        return self.tile + 2

    @property
    def positions(self) -> int:
        return self.span * self.span


F2 = Variant(2,
             np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float),
             np.array([[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]]),
             np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float))
F4 = Variant(4,
             np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                       [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float),
             np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                       [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]),
             np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
                       [0, 1, -1, 8, -8, 1]], float), hand=True)


@functools.cache
def _terms(variant: Variant, which: str, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A transform matrix (``bt``, ``at`` or ``a``, the transpose of ``at``) as sparse rows:
    column indices, coefficients and counts per row (cached: ~0.1 ms per call otherwise)."""
    matrix = variant.at.T if which == "a" else getattr(variant, which)
    rows, width = matrix.shape
    index = np.zeros((rows, width), dtype=np.int64)
    coef = np.zeros((rows, width), dtype=dtype)
    count = np.zeros(rows, dtype=np.int64)
    for i in range(rows):
        cols = np.flatnonzero(matrix[i])
        count[i] = cols.size
        index[i, :cols.size] = cols
        coef[i, :cols.size] = matrix[i, cols]
    return index, coef, count


# --- compiled loops ----------------------------------------------------------------------------


@jit()
def _combine(dst, src, offs, coefs, count):
    """dst[f] = sum over k < count of coefs[k] * src[offs[k] + f] (1-D arrays); up to four
    terms in one pass (each loop has few enough pointers for LLVM to vectorize it)."""
    n = dst.shape[0]
    s0 = src[offs[0]:offs[0] + n]
    c0 = coefs[0]
    if count == 1:
        for f in range(n):
            dst[f] = c0 * s0[f]
        return
    s1 = src[offs[1]:offs[1] + n]
    c1 = coefs[1]
    if count == 2:
        for f in range(n):
            dst[f] = c0 * s0[f] + c1 * s1[f]
        return
    s2 = src[offs[2]:offs[2] + n]
    c2 = coefs[2]
    if count == 3:
        for f in range(n):
            dst[f] = c0 * s0[f] + c1 * s1[f] + c2 * s2[f]
        return
    s3 = src[offs[3]:offs[3] + n]
    c3 = coefs[3]
    for f in range(n):
        dst[f] = c0 * s0[f] + c1 * s1[f] + c2 * s2[f] + c3 * s3[f]
    for k in range(4, count):
        s = src[offs[k]:offs[k] + n]
        c = coefs[k]
        for f in range(n):
            dst[f] += c * s[f]


# F(4x4, 3x3) transforms written out with their common subexpressions: about half the
# arithmetic of the generic ``_combine`` (which multiplies by every coefficient, 1 included) and
# one pass for all outputs; the input transform measured ~2x faster. Each maps `n`-long lines of
# `src` starting at the offsets `so` to lines of `dst` starting at `do`.
_TWO, _FOUR, _FIVE, _EIGHT = np.float32(2), np.float32(4), np.float32(5), np.float32(8)


@jit()
def _bt6_lines(src, so, dst, do, n):
    """B^T d: rows (4, 0, -5, 0, 1, 0) (0, -4, -4, 1, 1, 0) (0, 4, -4, -1, 1, 0)
    (0, -2, -1, 2, 1, 0) (0, 2, -1, -2, 1, 0) (0, 4, 0, -5, 0, 1)."""
    x0, x1, x2 = src[so[0]:so[0] + n], src[so[1]:so[1] + n], src[so[2]:so[2] + n]
    x3, x4, x5 = src[so[3]:so[3] + n], src[so[4]:so[4] + n], src[so[5]:so[5] + n]
    y0, y1, y2 = dst[do[0]:do[0] + n], dst[do[1]:do[1] + n], dst[do[2]:do[2] + n]
    y3, y4, y5 = dst[do[3]:do[3] + n], dst[do[4]:do[4] + n], dst[do[5]:do[5] + n]
    for f in range(n):
        d0, d1, d2, d3, d4, d5 = x0[f], x1[f], x2[f], x3[f], x4[f], x5[f]
        a, b = d4 - d2, _TWO * (d3 - d1)
        y0[f] = _FOUR * d0 - _FIVE * d2 + d4
        y1[f] = (d3 + d4) - _FOUR * (d1 + d2)
        y2[f] = (d4 - d3) + _FOUR * (d1 - d2)
        y3[f] = a + b
        y4[f] = a - b
        y5[f] = _FOUR * d1 - _FIVE * d3 + d5


@jit()
def _at6_lines(src, so, dst, do, n):
    """A^T m: rows (1, 1, 1, 1, 1, 0) (0, 1, -1, 2, -2, 0) (0, 1, 1, 4, 4, 0)
    (0, 1, -1, 8, -8, 1)."""
    x0, x1, x2 = src[so[0]:so[0] + n], src[so[1]:so[1] + n], src[so[2]:so[2] + n]
    x3, x4, x5 = src[so[3]:so[3] + n], src[so[4]:so[4] + n], src[so[5]:so[5] + n]
    y0, y1, y2, y3 = dst[do[0]:do[0] + n], dst[do[1]:do[1] + n], dst[do[2]:do[2] + n], \
        dst[do[3]:do[3] + n]
    for f in range(n):
        m1, m2, m3, m4 = x1[f], x2[f], x3[f], x4[f]
        a, b, c, d = m1 + m2, m1 - m2, m3 + m4, m3 - m4
        y0[f] = x0[f] + a + c
        y1[f] = b + _TWO * d
        y2[f] = a + _FOUR * c
        y3[f] = b + _EIGHT * d + x5[f]


@jit()
def _a6_lines(src, so, dst, do, n):
    """A g (the output gradient's transform): rows (1, 0, 0, 0) (1, 1, 1, 1) (1, -1, 1, -1)
    (1, 2, 4, 8) (1, -2, 4, -8) (0, 0, 0, 1)."""
    x0, x1, x2, x3 = src[so[0]:so[0] + n], src[so[1]:so[1] + n], src[so[2]:so[2] + n], \
        src[so[3]:so[3] + n]
    y0, y1, y2 = dst[do[0]:do[0] + n], dst[do[1]:do[1] + n], dst[do[2]:do[2] + n]
    y3, y4, y5 = dst[do[3]:do[3] + n], dst[do[4]:do[4] + n], dst[do[5]:do[5] + n]
    for f in range(n):
        g0, g1, g2, g3 = x0[f], x1[f], x2[f], x3[f]
        p, q = g0 + g2, g1 + g3
        r, t = g0 + _FOUR * g2, _TWO * g1 + _EIGHT * g3
        y0[f] = g0
        y1[f] = p + q
        y2[f] = p - q
        y3[f] = r + t
        y4[f] = r - t
        y5[f] = g3


@jit()
def _split_nb(src, top, left, tile, ab, dst):
    """dst[b, top + i, p % tile, p // tile] = src[b, i, j] with p = left + j: the padded
    image's columns grouped by phase (one numba pass; 2.6x faster than a NumPy strided copy
    per phase, whose inner blocks are only Cin long). If `ab` has rows, [a, b] per channel,
    the value stored is max(src*a + b, 0) instead (NaN stays NaN, as in
    ``batch_norm._affine_nb``): a batch norm + ReLU read on the way in, never stored."""
    images, h, w, c = src.shape
    affine = ab.shape[0] == 2
    for n in range(images):
        for i in range(h):
            row = dst[n, top + i]
            for j in range(w):
                p = left + j
                d = row[p % tile, p // tile]
                s = src[n, i, j]
                if affine:
                    for ch in range(c):
                        v = s[ch] * ab[0, ch] + ab[1, ch]
                        d[ch] = v if v > 0 or v != v else 0.0
                else:
                    for ch in range(c):
                        d[ch] = s[ch]


@jit()
def _input_tiles_nb(xps, th, tw, tile, index, coef, count, hand, s, v, pstride):
    """V = B^T d B for every tile (or A g A^T, with A as `index`/`coef`/`count`). xps: (images,
    rows, tile*(tw+1)*cin), each padded row with its columns split by phase; s: (span,
    tile*(tw+1)*cin) scratch; v: flat, position p's (tiles, cin) matrix at p*pstride. `hand`:
    0 = the sparse matrix, 1 = ``_bt6_lines``, 2 = ``_a6_lines``."""
    images, row = xps.shape[0], xps.shape[2]
    span = index.shape[0]
    cin = row // (tile * (tw + 1))
    run = tw * cin
    sflat = s.reshape(-1)
    offs = np.empty(span, dtype=np.int64)
    douts = np.empty(span, dtype=np.int64)
    dcols = np.empty(span, dtype=np.int64)
    for i in range(span):
        douts[i] = i * row
    for b in range(images):
        src = xps[b].reshape(-1)
        for ti in range(th):
            t0 = (b * th + ti) * run
            if hand == 0:
                for i in range(span):  # rows: B^T d over whole rows of tiles
                    for k in range(count[i]):
                        offs[k] = (tile * ti + index[i, k]) * row
                    _combine(s[i], src, offs, coef[i], count[i])
                for i in range(span):  # columns: (B^T d) B, one contiguous run per position
                    for j in range(span):
                        for k in range(count[j]):
                            q = index[j, k]
                            offs[k] = i * row + ((q % tile) * (tw + 1) + q // tile) * cin
                        p0 = (i * span + j) * pstride + t0
                        _combine(v[p0:p0 + run], sflat, offs, coef[j], count[j])
                continue
            width = span if hand == 1 else tile  # input lines per output line
            for a in range(width):
                offs[a] = (tile * ti + a) * row
            if hand == 1:
                _bt6_lines(src, offs, sflat, douts, row)
            else:
                _a6_lines(src, offs, sflat, douts, row)
            for i in range(span):
                for q in range(width):
                    offs[q] = i * row + ((q % tile) * (tw + 1) + q // tile) * cin
                for j in range(span):
                    dcols[j] = (i * span + j) * pstride + t0
                if hand == 1:
                    _bt6_lines(sflat, offs, v, dcols, run)
                else:
                    _a6_lines(sflat, offs, v, dcols, run)


@jit()
def _output_tiles_nb(m, pstride, th, tw, index, coef, count, hand, zw, zy, out, first, bias,
                     relu, stats):
    """Y = A^T M A for every tile. m: flat, position p's (tiles, cout) matrix at p*pstride;
    zw: (span, tile, tw*cout) and zy: (tile, tile, tw*cout) scratch; out: C-contiguous
    (images, ho, wo, width), Y going to channels first..first+cout (a concatenation's buffer
    after the channels already there, or all of a fresh output), partial tiles clipped.
    `hand`: 0 = the sparse A^T, 1 = ``_at6_lines``. The epilogue, as each pixel is stored:
    + bias if it has entries, then max(., 0) if `relu` (NaN stays NaN); if `stats` has rows,
    the sums of (value - bias) and of its square per channel are added into stats[0] and
    stats[1] (float64; each row of tiles summed in the output's dtype first)."""
    images, ho, wo = out.shape[0], out.shape[1], out.shape[2]
    tile, span = index.shape[0], index.shape[1]
    run = zw.shape[2]
    cout = run // tw
    biased, summed = bias.shape[0] == cout, stats.shape[0] == 2
    zero = np.float32(0.0)
    b = np.zeros(cout, dtype=zy.dtype)
    if biased:
        b[:] = bias
    p1 = np.zeros(cout, dtype=zy.dtype)
    p2 = np.zeros(cout, dtype=zy.dtype)
    wflat, yflat = zw.reshape(-1), zy.reshape(-1)
    offs = np.empty(span, dtype=np.int64)
    douts = np.empty(span, dtype=np.int64)
    for im in range(images):
        for ti in range(th):
            t0 = (im * th + ti) * tw * cout
            for i in range(span):  # columns: M A over whole rows of tiles
                if hand == 1:
                    for j in range(span):
                        offs[j] = (i * span + j) * pstride + t0
                    for q in range(tile):
                        douts[q] = (i * tile + q) * run
                    _at6_lines(m, offs, wflat, douts, run)
                    continue
                for q in range(tile):
                    for k in range(count[q]):
                        offs[k] = (i * span + index[q, k]) * pstride + t0
                    _combine(zw[i, q], m, offs, coef[q], count[q])
            rows = min(tile, ho - tile * ti)
            for q in range(tile):  # rows: A^T (M A)
                if hand == 1:
                    for i in range(span):
                        offs[i] = (i * tile + q) * run
                    for r in range(tile):
                        douts[r] = (r * tile + q) * run
                    _at6_lines(wflat, offs, yflat, douts, run)
                    continue
                for r in range(rows):
                    for k in range(count[r]):
                        offs[k] = (index[r, k] * tile + q) * run
                    _combine(zy[r, q], wflat, offs, coef[r], count[r])
            for r in range(rows):  # scatter the tiles' columns into the output row
                dst = out[im, tile * ti + r]
                for tj in range(tw):
                    for q in range(min(tile, wo - tile * tj)):
                        d = dst[tile * tj + q][first:first + cout]
                        src = zy[r, q, tj * cout:(tj + 1) * cout]
                        if not (biased or relu or summed):
                            for o in range(cout):
                                d[o] = src[o]
                            continue
                        for o in range(cout):
                            v = src[o] + b[o]
                            if relu and v <= 0:
                                v = zero
                            d[o] = v
                            if summed:
                                e = v - b[o]
                                p1[o] += e
                                p2[o] += e * e
            if summed:
                for o in range(cout):
                    stats[0, o] += p1[o]
                    stats[1, o] += p2[o]
                    p1[o] = 0
                    p2[o] = 0


# --- the kernel --------------------------------------------------------------------------------


def applies(g: conv.Geometry, n: int, cin: int, cout: int, dtype) -> bool:
    """Whether ``conv.conv2d`` (and its filter gradient) should take this convolution of `n`
    images: float32, 3x3, stride 1, no dilation, compiled loops available, at least 12
    channels on each side, and at least 512 output pixels in all (n * ho * wo): below that the
    fixed cost per call (filter transform, buffers, ~0.1 ms) lost, e.g. one 15x15 image.

    Measured on the project's 2-core AMD EPYC machine (2026-11-23), one thread, forward and
    filter gradient against im2col / kn2row: W4's 32x32 layers (12 outputs) 1.5-1.8x, its
    16x16 ones 1.2-1.5x, 8x8 with 12 and 148 channels 1.1-1.2x, 8x8x12 -> 12 even; W5's
    32-64 channel layers 1.6-2x. 3- and 8-channel sides lose: the products are too thin to
    pay for the transforms. (An earlier Intel machine had the 16x16 thin layers even.)"""
    if _combine is None or np.dtype(dtype) != np.float32:
        return False
    if g.kh != 3 or g.kw != 3 or g.sh != 1 or g.sw != 1 or g.dh != 1 or g.dw != 1:
        return False
    return min(cin, cout) >= 12 and n * g.ho * g.wo >= 512


def filter_transform(w: np.ndarray, variant: Variant = F4) -> np.ndarray:
    """U[p] = (G w G^T) at tile position p, as (positions, Cin, Cout) in w's dtype (float32
    arithmetic adds a few units in the last place, as rounding a float64 result would)."""
    u = _sandwich(variant.g.astype(w.dtype), np.ascontiguousarray(w))
    return u.reshape(variant.positions, w.shape[2], w.shape[3])


def _sandwich(left: np.ndarray, t: np.ndarray) -> np.ndarray:
    """left @ t @ left^T over the first two axes of `t` (a, b, ...) -> (i, j, ...), as two
    contiguous products (a one-shot einsum took ~1 ms for 64x64 channels)."""
    a, b = t.shape[:2]
    rows = np.matmul(left, t.reshape(a, -1)).reshape(left.shape[0], b, -1)  # (i, b, rest)
    return np.matmul(left, rows).reshape(left.shape[0], left.shape[0], *t.shape[2:])


def _staggered(positions: int, rows: int, cols: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """An empty (positions, rows, cols) array and its flat buffer; the position stride is an
    odd number of 64-byte lines: with a power-of-two stride the positions of one tile share
    L1 cache sets and evict each other (measured 3x slower transforms at 128 tiles x 32
    channels)."""
    itemsize = np.dtype(dtype).itemsize
    line = 64 // itemsize
    stride = -(-rows * cols // line) * line
    if (stride // line) % 2 == 0:
        stride += line
    flat = np.empty(positions * stride + line, dtype=dtype)
    start = (-flat.ctypes.data // itemsize) % line
    flat = flat[start:start + positions * stride]
    return as_strided(flat, (positions, rows, cols), (stride * itemsize, cols * itemsize,
                                                       itemsize)), flat


class _Tiler:
    """Transformed tiles (positions, tiles, channels) of chunks of an NHWC array: its padded
    copy with columns split by phase, scratch and the staggered output, reused per chunk.

    `which` transform: ``"bt"`` (B^T, span x span) for input tiles, which overlap by 2, or
    ``"a"`` (A, span x tile) for output-gradient tiles, which do not; either way tile ti, tj
    starts at row tile*ti and column tile*tj of the padded array. With `whole` (the tiles of
    the whole batch and their flat buffer, from ``_staggered``), each chunk is written to its
    own images' place there instead of to a chunk buffer, so the tiles outlive the call. With
    `prologue` ([a, b] per channel), the tiles are those of max(src*a + b, 0)."""

    def __init__(self, src: np.ndarray, top: int, left: int, th: int, tw: int, step: int,
                 variant: Variant, which: str,
                 whole: tuple[np.ndarray, np.ndarray] | None = None,
                 prologue: np.ndarray | None = None):
        self.src, self.top, self.left, self.th, self.tw = src, top, left, th, tw
        self.prologue = prologue if prologue is not None else np.empty((0, src.shape[3]),
                                                                        dtype=src.dtype)
        tile, span, c = variant.tile, variant.span, src.shape[3]
        self.tile, self.rows, self.positions = tile, tile * th + 2, variant.positions
        self.terms = _terms(variant, which, src.dtype.str)
        # the hand-written loops: B^T for input tiles, A for output-gradient tiles
        self.hand = 0 if not variant.hand else 1 if which == "bt" else 2
        self.split = np.zeros((step, self.rows, tile, tw + 1, c), dtype=src.dtype)
        self.scratch = np.empty((span, tile * (tw + 1) * c), dtype=src.dtype)
        self.whole = whole is not None
        self.tiles, self.flat = whole if whole is not None else _staggered(
            self.positions, step * th * tw, c, src.dtype)

    def __call__(self, b0: int, b1: int) -> np.ndarray:
        """Transformed tiles of images b0..b1: (positions, (b1-b0)*th*tw, channels)."""
        nb, per_image = b1 - b0, self.th * self.tw
        first = b0 * per_image if self.whole else 0  # where image b0's tiles go
        _split_nb(self.src[b0:b1], self.top, self.left, self.tile, self.prologue,
                  self.split[:nb])
        _input_tiles_nb(self.split[:nb].reshape(nb, self.rows, -1), self.th, self.tw, self.tile,
                        *self.terms, self.hand, self.scratch,
                        self.flat[first * self.src.shape[3]:], self.flat.size // self.positions)
        return self.tiles[:, first:first + nb * per_image]


def _packed_channels(a: np.ndarray) -> np.ndarray:
    """`a` itself if each pixel's channels are adjacent (a channel slice of a concatenation's
    gradient is: the tiler reads it in place, saving a 4 ms copy at 64x32x32x52), else a copy."""
    return a if a.strides[-1] == a.itemsize else np.ascontiguousarray(a)


def _step(lo: int, hi: int, per_image: int, itemsize: int) -> int:
    """Images per chunk of lo..hi: at most CHUNK_BYTES of tiles, the chunks of equal size
    (7, 7, 2 images would pay for the small chunk's BLAS calls as for a full one)."""
    most = max(1, min(hi - lo, CHUNK_BYTES // (per_image * itemsize)))
    chunks = -(-(hi - lo) // most)
    return max(1, -(-(hi - lo) // chunks))


def _even_step(n: int, per_image: int, itemsize: int) -> int:
    """Images per chunk of a whole batch, as ``_step``, for a count of chunks that is even when
    the work is large enough to split (3 chunks on 2 cores ran as 2 + 1)."""
    step = _step(0, n, per_image, itemsize)
    while (step > 1 and -(-n // step) % 2
           and n * per_image * itemsize >= parallel.PARALLEL_MIN_BYTES):
        step -= 1
    return step


def tiles_shape(n: int, g: conv.Geometry, cin: int, variant: Variant = F4) -> tuple:
    """Shape of the input tiles ``conv2d(keep_tiles=True)`` returns for `n` images."""
    return (variant.positions, n * -(-g.ho // variant.tile) * -(-g.wo // variant.tile), cin)


def _staggered_bytes(positions: int, rows: int, cols: int, itemsize: int) -> int:
    line = 64 // itemsize
    stride = -(-rows * cols // line) * line
    stride += line if (stride // line) % 2 == 0 else 0
    return (positions * stride + line) * itemsize


def conv2d_workspace(n: int, g: conv.Geometry, cin: int, cout: int, itemsize: int,
                     keep_tiles: bool = False, variant: Variant = F4) -> int:
    """Bytes ``conv2d`` holds while it runs besides x, w and its outputs, on one thread (each
    further thread taking chunks holds its own chunk buffers): the transformed filter, and per chunk
    of images the tiler's split copy, scratch and tiles (unless kept) and the products' tiles
    and output-transform scratch. For the memory plan."""
    tile, span, positions = variant.tile, variant.span, variant.positions
    th, tw = -(-g.ho // tile), -(-g.wo // tile)
    step = _even_step(n, positions * th * tw * (cin + cout), itemsize)
    rows = tile * th + 2
    elements = (positions * cin * cout + step * rows * tile * (tw + 1) * cin
                + span * tile * (tw + 1) * cin + span * tile * tw * cout + tile * tile * tw * cout)
    tiles = 0 if keep_tiles else _staggered_bytes(positions, step * th * tw, cin, itemsize)
    return elements * itemsize + tiles + _staggered_bytes(positions, step * th * tw, cout,
                                                          itemsize)


def _tiler_bytes(step: int, th: int, tw: int, c: int, itemsize: int, variant: Variant) -> int:
    """A ``_Tiler``'s buffers: the split copy, the scratch and the staggered tiles."""
    tile, span = variant.tile, variant.span
    elements = step * (tile * th + 2) * tile * (tw + 1) * c + span * tile * (tw + 1) * c
    return elements * itemsize + _staggered_bytes(variant.positions, step * th * tw, c, itemsize)


def conv2d_backprop_filter_workspace(n: int, g: conv.Geometry, cin: int, cout: int,
                                     itemsize: int, from_tiles: bool = False,
                                     variant: Variant = F4) -> int:
    """Bytes ``conv2d_backprop_filter`` holds besides its inputs and output on one thread: the
    input's tiler (none when given the forward's tiles) and the gradient's, and the
    transformed filter gradient's running sum and per-chunk product; after the chunks, the
    sum's total and the first half of the sandwich product. For the memory plan."""
    th, tw = -(-g.ho // variant.tile), -(-g.wo // variant.tile)
    step = _step(0, n, variant.positions * th * tw * (cin + cout), itemsize)
    du = variant.positions * cin * cout * itemsize
    tilers = _tiler_bytes(step, th, tw, cout, itemsize, variant)
    if not from_tiles:
        tilers += _tiler_bytes(step, th, tw, cin, itemsize, variant)
    after = 2 * du + variant.g.shape[1] * variant.span * cin * cout * itemsize
    return max(tilers + 2 * du, after)


@single_threaded_blas
def conv2d(x: np.ndarray, w: np.ndarray, g: conv.Geometry, variant: Variant = F4,
           keep_tiles: bool = False, prologue: np.ndarray | None = None,
           bias: np.ndarray | None = None, relu: bool = False,
           into: tuple[np.ndarray, int] | None = None, moments: bool = False):
    """NHWC 3x3 stride-1 convolution of `x` with HWIO filter `w`, as ``conv.conv2d``.

    With `keep_tiles`, (output, input tiles): the transformed input of the whole batch, which
    ``conv2d_backprop_filter`` takes in place of `x` (2.25x x's size for F(4x4); computing
    them is about a quarter of the filter gradient's work). With `prologue` ([a, b], shape
    (2, Cin)), the input is max(x*a + b, 0), applied while reading x: a batch norm + ReLU
    whose output is never stored (the zero padding stays zero, as it is the padding of the
    ReLU's output).

    The epilogue, applied by the output transform as it stores each pixel: + `bias`, then
    max(., 0) if `relu` (the values ``bias.add_bias_inplace`` gives, without its pass). `into`
    (buf, first): the output is stored in channels first..first+cout of `buf`, C-contiguous
    (n, ho, wo, width), and returned as that channel slice (a dense layer writing straight into
    its block's concatenation buffer). With `moments`, two more results: the output's
    per-channel mean and Bessel-corrected variance (as ``batch_norm.channel_moments``, to
    float32 rounding), summed as the pixels are stored instead of in a pass that reads them."""
    x = _packed_channels(x)
    n, cin, cout = x.shape[0], x.shape[3], w.shape[3]
    if prologue is not None:
        prologue = np.ascontiguousarray(prologue, dtype=x.dtype)
        if prologue.shape != (2, cin):
            raise ValueError(f"the prologue must be [a, b] of shape (2, {cin}), got "
                             f"{list(prologue.shape)}")
    tile, span, positions = variant.tile, variant.span, variant.positions
    th, tw = -(-g.ho // tile), -(-g.wo // tile)
    u = filter_transform(w.astype(x.dtype, copy=False), variant)
    at_terms = _terms(variant, "at", x.dtype.str)
    hand = int(variant.hand)
    if into is None:
        buf, first = np.empty((n, g.ho, g.wo, cout), dtype=x.dtype), 0
    else:
        buf, first = into
        if (buf.shape[:3] != (n, g.ho, g.wo) or not buf.flags.c_contiguous
                or buf.dtype != x.dtype or first + cout > buf.shape[3]):
            raise ValueError(f"cannot store {cout} channels from {first} in an array of shape "
                             f"{list(buf.shape)}")
    out = buf[..., first:first + cout]
    b = np.empty(0, x.dtype) if bias is None else np.ascontiguousarray(bias, dtype=x.dtype)
    per_image = positions * th * tw * (cin + cout)
    kept = _staggered(positions, n * th * tw, cin, x.dtype) if keep_tiles else None

    small = n * per_image * x.itemsize < parallel.PARALLEL_MIN_BYTES
    step = _even_step(n, per_image, x.itemsize)
    chunks = -(-n // step)
    buffers: dict[int, tuple] = {}  # per thread, made at its first chunk

    def work(c0: int, c1: int) -> np.ndarray:
        """Chunks c0..c1 of `step` images on this thread's buffers; their moments' sums."""
        mine = buffers.get(threading.get_ident())
        if mine is None:
            mine = buffers[threading.get_ident()] = (
                _Tiler(x, g.pt, g.pl, th, tw, step, variant, "bt", kept, prologue),
                np.empty((span, tile, tw * cout), dtype=x.dtype),
                np.empty((tile, tile, tw * cout), dtype=x.dtype),
                *_staggered(positions, step * th * tw, cout, x.dtype))
        tiles, zw, zy, m, mflat = mine
        stats = np.zeros((2 if moments else 0, cout))
        for b0 in range(c0 * step, min(n, c1 * step), step):
            b1 = min(n, b0 + step)
            v = tiles(b0, b1)
            np.matmul(v, u, out=m[:, :v.shape[1]])
            _output_tiles_nb(mflat, mflat.size // positions, th, tw, *at_terms, hand, zw, zy,
                             buf[b0:b1], first, b, relu, stats)
        return stats

    # one slice per chunk, whoever comes free takes the next: the chunks (so every product's
    # height, so the bits) are the batch's alone, while the threads share them out as they
    # come free, an inter-op worker joining a convolution begun beside its kernel included;
    # the moments' sums are added in chunk order, whoever ran them
    stats = sum(parallel.split(chunks, 0, work, slices=1 if small else chunks))
    results: tuple = (out,) + ((kept[0],) if keep_tiles else ())
    if not moments:
        return results if keep_tiles else out
    count = n * g.ho * g.wo
    with np.errstate(invalid="ignore", divide="ignore"):
        d = stats[0] / count
        var = np.maximum(stats[1] / count - d * d, 0.0) * (count / max(count - 1, 1))
    mean = d + (b if b.size else 0.0)
    return results + (mean.astype(x.dtype), var.astype(x.dtype))


@single_threaded_blas
def conv2d_backprop_filter(x: np.ndarray | None, gr: np.ndarray, g: conv.Geometry,
                           variant: Variant = F4,
                           tiles: np.ndarray | None = None) -> np.ndarray:
    """Gradient w.r.t. the HWIO filter of ``conv2d``, as ``conv.conv2d_backprop_filter``; from
    the forward's kept input `tiles` instead of `x` when given.

    With Y = A^T [U . V] A per tile, dU[p] = sum over tiles of V[p]^T (A dY A^T)[p] and
    dW = G^T dU G: the same input tiles, the output gradient's tiles transformed by A."""
    gr = _packed_channels(gr)
    n, cout = gr.shape[0], gr.shape[3]
    positions = variant.positions
    th, tw = -(-g.ho // variant.tile), -(-g.wo // variant.tile)
    if tiles is None:
        x = _packed_channels(x)
        cin, dtype = x.shape[3], x.dtype
    else:
        cin, dtype = tiles.shape[2], tiles.dtype
        if tiles.shape != tiles_shape(n, g, cin, variant):
            raise ValueError(f"tiles of shape {list(tiles.shape)} do not match {n} images of "
                             f"{g.ho}x{g.wo} outputs: expected {list(tiles_shape(n, g, cin))}")
    per_image = positions * th * tw * (cin + cout)

    def work(lo: int, hi: int) -> np.ndarray:
        step = _step(lo, hi, per_image, dtype.itemsize)
        x_tiles = None if tiles is not None else _Tiler(x, g.pt, g.pl, th, tw, step, variant,
                                                        "bt")
        gr_tiles = _Tiler(gr, 0, 0, th, tw, step, variant, "a")
        # dU^T[p] = (A dY A^T)[p]^T V[p]: the thin gradient side as the transposed operand
        # ran 25-80% faster in OpenBLAS than V[p]^T (A dY A^T)[p] on W4's 28+ channel layers
        du_t = np.zeros((positions, cout, cin), dtype=dtype)
        part = np.empty_like(du_t)
        for b0 in range(lo, hi, step):
            b1 = min(hi, b0 + step)
            v = (x_tiles(b0, b1) if x_tiles is not None
                 else tiles[:, b0 * th * tw:b1 * th * tw])
            np.matmul(gr_tiles(b0, b1).transpose(0, 2, 1), v, out=part)
            du_t += part
        return du_t

    du_t = sum(parallel.split(n, n * per_image * dtype.itemsize, work))
    du = du_t.transpose(0, 2, 1).reshape(variant.span, variant.span, cin, cout)
    return _sandwich(np.ascontiguousarray(variant.g.T, dtype=dtype), du)
