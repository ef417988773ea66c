"""2-D convolution on NHWC arrays: forward, gradient w.r.t. the input, gradient w.r.t. the filter.

Every variant is one BLAS matrix product plus a cheap data-movement pass; which operand gets
expanded depends on which side has fewer channels (DenseNet convs have 12 outputs and up to
148 inputs, so expanding the thin side moves ~10x less memory than plain im2col):

- ``im2col``: copy each receptive field into a row (rows x taps*Cin), multiply by the filter.
- ``kn2row``: multiply the input by every tap's filter at once (rows x taps*Cout), then sum
  each output pixel's taps from shifted rows, skipping taps in the padding (``tap_sum``).
- filter gradient, thin output: scatter the output gradient to every tap's shifted rows
  of the padded grid (``tap_scatter``), then one product with the padded input; at stride 1,
  gather it instead (im2col of the output gradient on the input grid, no padded copy of x).
- input gradient: the convolution of the (stride-dilated, padded) output gradient with the
  flipped, transposed filter, so it reuses the forward path and its choice of algorithm.
- 3x3 stride-1 float32 convolutions go to ``winograd`` first (forward and filter gradient)
  where ``winograd.applies`` says it measured faster.

Threads: OpenBLAS runs single-threaded here (``framework.threads``); instead the batch is
split into one slice per idle core (``parallel.split``), each slice a loop of cache-sized
chunks on its own thread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tapeflow.framework.threads import single_threaded_blas
from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit
from tapeflow.kernels.rows import rows as _rows


@dataclass(frozen=True)
class Geometry:
    """Sizes of one 2-D convolution or pooling window: kernel, strides, dilations, padding."""

    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pb: int
    pl: int
    pr: int
    h: int
    w: int
    ho: int
    wo: int

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def padded(self) -> bool:
        return bool(self.pt or self.pb or self.pl or self.pr)

    @property
    def pointwise(self) -> bool:
        """A 1x1 window without padding: the convolution is a plain matrix product."""
        return self.kh == 1 and self.kw == 1 and not self.padded


def _same_pads(size: int, k: int, s: int, d: int) -> tuple[int, int, int]:
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2, out


def geometry(hw: tuple[int, int], k: tuple[int, int], strides: tuple[int, int],
             dilations: tuple[int, int], padding) -> Geometry:
    """Output size and padding of a window sweep ('SAME', 'VALID' or ((top, bottom), (l, r)))."""
    sizes = []
    for axis in range(2):
        size, kk, s, d = hw[axis], k[axis], strides[axis], dilations[axis]
        if padding == "SAME":
            sizes.append(_same_pads(size, kk, s, d))
            continue
        before, after = (0, 0) if padding == "VALID" else padding[axis]
        span = size + before + after - (kk - 1) * d
        if span < 1:
            raise ValueError(f"the window ({kk} with dilation {d}) is larger than the padded "
                             f"input ({size + before + after})")
        sizes.append((before, after, (span - 1) // s + 1))
    (pt, pb, ho), (pl, pr, wo) = sizes
    return Geometry(k[0], k[1], strides[0], strides[1], dilations[0], dilations[1],
                    pt, pb, pl, pr, hw[0], hw[1], ho, wo)


def pad(x: np.ndarray, g: Geometry, value: float = 0.0) -> np.ndarray:
    """Pad the spatial dims of NHWC `x` as the geometry says (no copy when there is none)."""
    if not g.padded:
        return x
    n, h, w, c = x.shape
    xp = np.full((n, h + g.pt + g.pb, w + g.pl + g.pr, c), value, dtype=x.dtype)
    xp[:, g.pt:g.pt + h, g.pl:g.pl + w] = x
    return xp


def _tap_offsets(g: Geometry, wp: int) -> np.ndarray:
    return np.array([a * g.dh * wp + b * g.dw for a in range(g.kh) for b in range(g.kw)],
                    dtype=np.int64)


def _window(arr: np.ndarray, a: int, b: int, g: Geometry) -> np.ndarray:
    """View of `arr` (N, Hp, Wp, C) at tap (a, b) for every output pixel (N, Ho, Wo, C)."""
    r0, c0 = a * g.dh, b * g.dw
    return arr[:, r0:r0 + (g.ho - 1) * g.sh + 1:g.sh, c0:c0 + (g.wo - 1) * g.sw + 1:g.sw]


# --- compiled loops (numba); each has a NumPy twin below -------------------------------------


@jit()
def _tap_sum_nb(y, images, h, w, ho, wo, kh, kw, sh, sw, dh, dw, pt, pl, out):
    """y: (images*h*w, taps*cout) on the unpadded input grid; out: (images*ho*wo, cout).
    Taps that fall in the padding contribute nothing, so they are skipped."""
    cout = out.shape[1]
    for r in range(images * ho):
        b, i = r // ho, r % ho
        for j in range(wo):
            dst = out[r * wo + j]
            for o in range(cout):
                dst[o] = 0.0
            for a in range(kh):
                ii = i * sh + a * dh - pt
                if ii < 0 or ii >= h:
                    continue
                for q in range(kw):
                    jj = j * sw + q * dw - pl
                    if jj < 0 or jj >= w:
                        continue
                    t = a * kw + q
                    src = y[(b * h + ii) * w + jj, t * cout:(t + 1) * cout]
                    for o in range(cout):
                        dst[o] += src[o]


@jit()
def _tap_scatter_nb(gr, images, hp, wp, ho, wo, sh, sw, offs, cols):
    """gr: (images*ho*wo, cout); cols: (images*hp*wp, taps*cout), both C-contiguous."""
    taps = offs.shape[0]
    cout = gr.shape[1]
    for r in range(images * ho):
        b, i = r // ho, r % ho
        for j in range(wo):
            base = b * hp * wp + i * sh * wp + j * sw
            src = gr[r * wo + j]
            for t in range(taps):
                dst = cols[base + offs[t], t * cout:(t + 1) * cout]
                for o in range(cout):
                    dst[o] = src[o]


@jit()
def _im2col_nb(xp, kh, kw, sh, sw, dh, dw, ho, wo, cols):
    """xp: (images, hp, wp, c); cols: (images*ho*wo, taps*c), both C-contiguous. With dw == 1
    a window row's kw pixels are adjacent in xp as in cols, so each is one run of kw*c values
    (the 3-channel stem: runs of 9 instead of 3, im2col 3.3 -> ~1.2 ms at [64,32,32,3])."""
    images, _, wp, c = xp.shape
    hpwp = xp.shape[1] * wp
    flat = xp.reshape(-1)
    run = kw * c if dw == 1 else c
    pieces = 1 if dw == 1 else kw
    for r in range(images * ho):
        b, i = r // ho, r % ho
        for j in range(wo):
            dst = cols[r * wo + j]
            for a in range(kh):
                row = b * hpwp + (i * sh + a * dh) * wp + j * sw
                for q in range(pieces):
                    s0 = (row + q * dw) * c
                    src = flat[s0:s0 + run]
                    d = dst[(a * kw + q) * c:(a * kw + q) * c + run]
                    for e in range(run):
                        d[e] = src[e]


# --- data-movement passes (write into caller-owned buffers) ------------------------------------


def tap_sum(y: np.ndarray, images: int, g: Geometry, out: np.ndarray) -> None:
    """out[n,i,j] = sum over taps t inside the input of y[row of t's input pixel, t's block]."""
    cout = out.shape[3]
    if _tap_sum_nb is not None:
        _tap_sum_nb(y, images, g.h, g.w, g.ho, g.wo, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.pt,
                    g.pl, _rows(out))
        return
    y4 = pad(y.reshape(images, g.h, g.w, g.taps * cout), g)
    out[...] = 0
    for a in range(g.kh):
        for b in range(g.kw):
            t = a * g.kw + b
            out += _window(y4, a, b, g)[..., t * cout:(t + 1) * cout]


def tap_scatter(gr: np.ndarray, hp: int, wp: int, g: Geometry, cols: np.ndarray) -> None:
    """Each tap's block of `cols` gets `gr` at that tap's shifted rows of the padded grid.

    Rows no tap touches are left alone (zero in a fresh buffer, and the same rows each call).
    """
    images, cout = gr.shape[0], gr.shape[3]
    if _tap_scatter_nb is not None:
        _tap_scatter_nb(_rows(gr), images, hp, wp, g.ho, g.wo, g.sh, g.sw, _tap_offsets(g, wp),
                        cols)
        return
    cols4 = cols.reshape(images, hp, wp, g.taps * cout)
    for a in range(g.kh):
        for b in range(g.kw):
            t = a * g.kw + b
            _window(cols4, a, b, g)[..., t * cout:(t + 1) * cout] = gr


def im2col(xp: np.ndarray, g: Geometry, cols: np.ndarray) -> None:
    """Receptive fields as rows: cols[n, i, j, tap] = the input pixel under that tap."""
    if _im2col_nb is not None:
        _im2col_nb(np.ascontiguousarray(xp), g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.ho, g.wo,
                   cols.reshape(-1, cols.shape[3] * cols.shape[4]))
        return
    for a in range(g.kh):
        for b in range(g.kw):
            cols[:, :, :, a * g.kw + b] = _window(xp, a, b, g)


# --- batching: split the batch over the cores, then into chunks that stay in cache ------------

CHUNK_BYTES = 1 << 20


class _Chunks:
    """Split images lo..hi so each chunk's expanded buffer (``per_image`` elements/image) fits
    in cache; a padded copy of each chunk is written into one reused, pre-zeroed buffer."""

    def __init__(self, x: np.ndarray, g: Geometry, per_image: int, lo: int, hi: int):
        self.x, self.g = x, g
        _, h, w, c = x.shape
        self.hp, self.wp = h + g.pt + g.pb, w + g.pl + g.pr
        self.step = max(1, min(hi - lo, CHUNK_BYTES // max(1, per_image * x.itemsize)))
        self.bounds = [(b, min(hi, b + self.step)) for b in range(lo, hi, self.step)]
        self._pad = (np.zeros((self.step, self.hp, self.wp, c), dtype=x.dtype)
                     if g.padded else None)

    def padded(self, b0: int, b1: int) -> np.ndarray:
        """Images b0..b1 of x, padded (a view into the reused buffer)."""
        if self._pad is None:
            return self.x[b0:b1]
        g, (_, h, w, _) = self.g, self.x.shape
        xp = self._pad[:b1 - b0]
        xp[:, g.pt:g.pt + h, g.pl:g.pl + w] = self.x[b0:b1]
        return xp


# --- the three convolution kernels -------------------------------------------------------------


def conv2d_workspace(x_shape: tuple, w_shape: tuple, g: Geometry, dtype: np.dtype) -> int:
    """Bytes ``conv2d`` holds while it runs besides x, w and its output, on one thread (each
    further parallel slice holds its own chunk buffers), by the path ``conv2d`` takes: the
    Winograd tiler's buffers, a strided pointwise input's copy, kn2row's reordered filter and
    expanded rows, or im2col's columns and padded chunk. For the memory plan; x is taken to be
    contiguous (a channel slice of a wider array is copied first on the non-Winograd paths)."""
    from tapeflow.kernels import winograd

    n, h, w, cin = x_shape
    cout, size = w_shape[3], np.dtype(dtype).itemsize
    if winograd.applies(g, n, cin, cout, dtype):
        return winograd.conv2d_workspace(n, g, cin, cout, size)
    if g.pointwise:
        return 0 if g.sh == g.sw == 1 else n * g.ho * g.wo * cin * size
    if cout * g.sh * g.sw < cin:
        per_image = h * w * g.taps * cout
        step = max(1, min(n, CHUNK_BYTES // (per_image * size)))
        return (cin * g.taps * cout + step * per_image) * size
    per_image = g.ho * g.wo * g.taps * cin
    step = max(1, min(n, CHUNK_BYTES // max(1, per_image * size)))
    padded = step * (h + g.pt + g.pb) * (w + g.pl + g.pr) * cin if g.padded else 0
    return (step * per_image + padded) * size


def conv2d_backprop_input_workspace(g_shape: tuple, w_shape: tuple, g: Geometry,
                                    dtype: np.dtype) -> int:
    """Bytes ``conv2d_backprop_input`` holds besides its inputs and output, by its path: the
    transposed (pointwise) or flipped filter, then the forward convolution it runs (its
    workspace), over the gradient spread by the stride where ``_flipped`` does not apply, and
    a strided pointwise gradient's rows before they are spread into dx. For the memory plan."""
    n, ho, wo, cout = g_shape
    cin, size = w_shape[2], np.dtype(dtype).itemsize
    if g.pointwise:
        rows = 0 if g.sh == g.sw == 1 else n * ho * wo * cin * size
        return cin * cout * size + rows
    flipped = (g.kh, g.kw, cout, cin)
    inner = _flipped(g)
    if inner is not None:
        return g.taps * cin * cout * size + conv2d_workspace(g_shape, flipped, inner, dtype)
    hd, wd = g.h + (g.kh - 1) * g.dh, g.w + (g.kw - 1) * g.dw
    spread = Geometry(g.kh, g.kw, 1, 1, g.dh, g.dw, 0, 0, 0, 0, hd, wd, g.h, g.w)
    return (g.taps * cin * cout + n * hd * wd * cout) * size + \
        conv2d_workspace((n, hd, wd, cout), flipped, spread, dtype)


def conv2d_backprop_filter_workspace(x_shape: tuple, cout: int, g: Geometry,
                                     dtype: np.dtype) -> int:
    """Bytes ``conv2d_backprop_filter`` holds besides its inputs and output on one thread, by
    its path: Winograd's tilers and transformed-gradient sums; a strided pointwise input's
    copy; or the gather / scatter / im2col columns, the padded chunk and the running sum with
    each chunk's product. For the memory plan."""
    from tapeflow.kernels import winograd

    n, h, w, cin = x_shape
    size = np.dtype(dtype).itemsize
    if winograd.applies(g, n, cin, cout, dtype):
        return winograd.conv2d_backprop_filter_workspace(n, g, cin, cout, size)
    if g.pointwise:
        copy = 0 if g.sh == g.sw == 1 else n * g.ho * g.wo * cin
        return (copy + cin * cout) * size
    sums = 2 * g.taps * cin * cout  # the running sum and one chunk's product

    def chunked(per_image: int, hw: tuple, c: int, padded: bool, pads: tuple) -> int:
        step = max(1, min(n, CHUNK_BYTES // max(1, per_image * size)))
        pad = step * (hw[0] + pads[0] + pads[1]) * (hw[1] + pads[2] + pads[3]) * c
        return step * per_image + (pad if padded else 0)

    inner = _flipped(g)
    if cout < cin and inner is not None:
        cols = chunked(h * w * g.taps * cout, (g.ho, g.wo), cout, inner.padded,
                       (inner.pt, inner.pb, inner.pl, inner.pr))
    elif cout * g.sh * g.sw < cin:
        hp, wp = h + g.pt + g.pb, w + g.pl + g.pr
        cols = chunked(hp * wp * g.taps * cout, (h, w), cin, g.padded,
                       (g.pt, g.pb, g.pl, g.pr))
    else:
        cols = chunked(g.ho * g.wo * g.taps * cin, (h, w), cin, g.padded,
                       (g.pt, g.pb, g.pl, g.pr))
    return (cols + sums) * size


def _work_bytes(nbytes: int, macs: int) -> int:
    """The size a 1x1 convolution's split is decided by: its bytes, or its multiply-adds as
    the bytes a pass would move in the same time (a core here: ~30 G multiply-adds/s in these
    thin products against ~8 GB/s), whichever is larger. The 8x8 transition of W4's DenseNet
    (1.8 MB, 103 MFLOP, 1.3 ms) ran on one core beside an idle one when bytes alone decided."""
    return max(nbytes, macs // 4)


@single_threaded_blas
def conv2d(x: np.ndarray, w: np.ndarray, g: Geometry) -> np.ndarray:
    """NHWC convolution (cross-correlation, as TF) of `x` with HWIO filter `w`."""
    n, _, _, cin = x.shape
    cout = w.shape[3]
    from tapeflow.kernels import winograd  # here, as winograd imports this module

    if winograd.applies(g, n, cin, cout, x.dtype):
        return winograd.conv2d(x, w, g)
    x = np.ascontiguousarray(x)
    out = np.empty((n, g.ho, g.wo, cout), dtype=x.dtype)
    if g.pointwise:
        xs = x if g.sh == g.sw == 1 else np.ascontiguousarray(x[:, ::g.sh, ::g.sw])
        w2 = w.reshape(cin, cout)

        x_rows, out_rows = _rows(xs), _rows(out)
        step = max(1, CHUNK_BYTES // ((cin + cout) * x.itemsize))

        def product(lo: int, hi: int) -> None:
            # cache-sized blocks of rows: OpenBLAS packs a thin (K=Cin) product's operands
            # per call, and one call over 32k rows ran 27% slower than 2k-row blocks
            for r0 in range(lo, hi, step):
                r1 = min(hi, r0 + step)
                np.matmul(x_rows[r0:r1], w2, out=out_rows[r0:r1])

        parallel.split(x_rows.shape[0], _work_bytes(xs.nbytes, x_rows.shape[0] * cin * cout),
                       product)
        return out
    if cout * g.sh * g.sw < cin:  # kn2row: expand the thin output side
        w_all = np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(cin, g.taps * cout)
        per_image = g.h * g.w * g.taps * cout

        def kn2row(lo: int, hi: int) -> None:
            step = max(1, min(hi - lo, CHUNK_BYTES // (per_image * x.itemsize)))
            y = np.empty((step * g.h * g.w, g.taps * cout), dtype=x.dtype)
            for b0 in range(lo, hi, step):
                b1 = min(hi, b0 + step)
                m = (b1 - b0) * g.h * g.w
                np.matmul(_rows(x[b0:b1]), w_all, out=y[:m])
                tap_sum(y[:m], b1 - b0, g, out[b0:b1])

        parallel.split(n, n * per_image * x.itemsize, kn2row)
        return out
    w2 = w.reshape(g.taps * cin, cout)

    def im2col_product(lo: int, hi: int) -> None:
        chunks = _Chunks(x, g, g.ho * g.wo * g.taps * cin, lo, hi)
        cols = np.empty((chunks.step, g.ho, g.wo, g.taps, cin), dtype=x.dtype)
        for b0, b1 in chunks.bounds:
            im2col(chunks.padded(b0, b1), g, cols[:b1 - b0])
            np.matmul(cols[:b1 - b0].reshape(-1, g.taps * cin), w2, out=_rows(out[b0:b1]))

    parallel.split(n, out.nbytes * g.taps * cin // cout, im2col_product)
    return out


@single_threaded_blas
def conv2d_backprop_input(gr: np.ndarray, w: np.ndarray, g: Geometry) -> np.ndarray:
    """Gradient w.r.t. the input of ``conv2d`` given the output gradient `gr`."""
    n = gr.shape[0]
    cin, cout = w.shape[2], w.shape[3]
    if g.pointwise:
        w_t = np.ascontiguousarray(w.reshape(cin, cout).T).reshape(1, 1, cout, cin)
        inner = Geometry(1, 1, 1, 1, 1, 1, 0, 0, 0, 0, g.ho, g.wo, g.ho, g.wo)
        rows = conv2d(gr, w_t, inner)
        if g.sh == g.sw == 1:
            return rows
        dx = np.zeros((n, g.h, g.w, cin), dtype=gr.dtype)
        dx[:, ::g.sh, ::g.sw] = rows
        return dx
    # dx[a] = sum_k gd[a + k*d] * w[K-1-k], where gd is gr spread by the stride and shifted by
    # (K-1)*d - pad_before: a stride-1 convolution with the flipped, transposed filter.
    w_flip = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
    inner = _flipped(g)
    if inner is not None:
        return conv2d(gr, w_flip, inner)
    ext_h, ext_w = (g.kh - 1) * g.dh, (g.kw - 1) * g.dw
    before = (ext_h - g.pt, ext_w - g.pl)
    hd, wd = g.h + ext_h, g.w + ext_w
    gd = np.zeros((n, hd, wd, cout), dtype=gr.dtype)
    i0, i1 = _spread(g.ho, g.sh, before[0], hd)
    j0, j1 = _spread(g.wo, g.sw, before[1], wd)
    if i1 > i0 and j1 > j0:
        gd[:, before[0] + i0 * g.sh:before[0] + (i1 - 1) * g.sh + 1:g.sh,
           before[1] + j0 * g.sw:before[1] + (j1 - 1) * g.sw + 1:g.sw] = gr[:, i0:i1, j0:j1]
    inner = Geometry(g.kh, g.kw, 1, 1, g.dh, g.dw, 0, 0, 0, 0, hd, wd, g.h, g.w)
    return conv2d(gd, w_flip, inner)


def _flipped(g: Geometry) -> Geometry | None:
    """For a stride-1 convolution, the geometry under which the output gradient, swept by the
    flipped filter, lands on the input grid: tap (a, b) of row (i, j) reads the output
    gradient at (i + a*dh - before, j + b*dw - left), where the forward filter's tap is
    (kh-1-a, kw-1-b). None when strided or when the padding is wider than the window."""
    ext_h, ext_w = (g.kh - 1) * g.dh, (g.kw - 1) * g.dw
    before = (ext_h - g.pt, ext_w - g.pl)
    after = (g.h + ext_h - g.ho - before[0], g.w + ext_w - g.wo - before[1])
    if g.sh != 1 or g.sw != 1 or min(before + after) < 0:
        return None
    return Geometry(g.kh, g.kw, 1, 1, g.dh, g.dw, before[0], after[0], before[1], after[1],
                    g.ho, g.wo, g.h, g.w)


def _spread(n_out: int, stride: int, offset: int, size: int) -> tuple[int, int]:
    """Range of output indices i whose spread position offset + i*stride lies in [0, size)."""
    first = max(0, math.ceil(-offset / stride))
    end = min(n_out, (size - 1 - offset) // stride + 1)
    return first, end


@single_threaded_blas
def conv2d_backprop_filter(x: np.ndarray, gr: np.ndarray, g: Geometry) -> np.ndarray:
    """Gradient w.r.t. the HWIO filter of ``conv2d`` given input `x` and output gradient `gr`."""
    n, _, _, cin = x.shape
    cout = gr.shape[3]
    from tapeflow.kernels import winograd

    if winograd.applies(g, n, cin, cout, x.dtype):
        return winograd.conv2d_backprop_filter(x, gr, g)
    x, gr = np.ascontiguousarray(x), np.ascontiguousarray(gr)
    if g.pointwise:
        xs = x if g.sh == g.sw == 1 else np.ascontiguousarray(x[:, ::g.sh, ::g.sw])

        def product(lo: int, hi: int) -> np.ndarray:
            return _rows(xs[lo:hi]).T @ _rows(gr[lo:hi])

        return sum(parallel.split(n, _work_bytes(xs.nbytes, n * g.ho * g.wo * cin * cout),
                                  product)).reshape(1, 1, cin, cout)
    inner = _flipped(g)
    if cout < cin and inner is not None:  # gather the thin gradient under every tap
        per_image = g.h * g.w * g.taps * cout

        def gather_product(lo: int, hi: int) -> np.ndarray:
            chunks = _Chunks(gr, inner, per_image, lo, hi)
            cols = np.empty((chunks.step * g.h * g.w, g.taps * cout), dtype=x.dtype)
            dw = np.zeros((cin, g.taps * cout), dtype=x.dtype)
            for b0, b1 in chunks.bounds:
                m = (b1 - b0) * g.h * g.w
                im2col(chunks.padded(b0, b1), inner, cols[:m].reshape(b1 - b0, g.h, g.w, g.taps,
                                                                      cout))
                dw += _rows(x[b0:b1]).T @ cols[:m]
            return dw

        dw = sum(parallel.split(n, n * per_image * x.itemsize, gather_product))
        return np.ascontiguousarray(
            dw.reshape(cin, g.kh, g.kw, cout)[:, ::-1, ::-1].transpose(1, 2, 0, 3))
    if cout * g.sh * g.sw < cin:  # scatter the thin gradient to every tap, one product
        hp, wp = g.h + g.pt + g.pb, g.w + g.pl + g.pr

        def scatter_product(lo: int, hi: int) -> np.ndarray:
            chunks = _Chunks(x, g, hp * wp * g.taps * cout, lo, hi)
            cols = np.zeros((chunks.step * hp * wp, g.taps * cout), dtype=x.dtype)
            dw = np.zeros((cin, g.taps * cout), dtype=x.dtype)
            for b0, b1 in chunks.bounds:
                m = (b1 - b0) * hp * wp
                tap_scatter(gr[b0:b1], hp, wp, g, cols[:m])
                dw += _rows(chunks.padded(b0, b1)).T @ cols[:m]
            return dw

        dw = sum(parallel.split(n, n * hp * wp * g.taps * cout * x.itemsize, scatter_product))
        return np.ascontiguousarray(dw.reshape(cin, g.kh, g.kw, cout).transpose(1, 2, 0, 3))

    def im2col_product(lo: int, hi: int) -> np.ndarray:
        chunks = _Chunks(x, g, g.ho * g.wo * g.taps * cin, lo, hi)
        cols = np.empty((chunks.step, g.ho, g.wo, g.taps, cin), dtype=x.dtype)
        dw = np.zeros((g.taps * cin, cout), dtype=x.dtype)
        for b0, b1 in chunks.bounds:
            im2col(chunks.padded(b0, b1), g, cols[:b1 - b0])
            dw += cols[:b1 - b0].reshape(-1, g.taps * cin).T @ _rows(gr[b0:b1])
        return dw

    dw = sum(parallel.split(n, n * g.ho * g.wo * g.taps * cin * x.itemsize, im2col_product))
    return dw.reshape(g.kh, g.kw, cin, cout)
