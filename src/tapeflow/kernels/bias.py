"""Channels-last bias kernels: the fused in-place bias (+ ReLU), and BiasAddGrad's sums.

A convolution's fresh output gets its bias (and ReLU) in one in-place pass instead of two new
arrays (BiasAdd, then Relu), which the fusion pass arranges (``ops.fused_ops``).

BiasAddGrad sums a gradient over every axis but the channels. NumPy's ``sum`` reduces a
(rows, C) array row by row, and a compiled loop over a channel slice of a wider array (the
usual case: a conv output that was concatenated) cannot vectorize, as the column index is not
provably in range; both ran at ~5 ns per element. A product with a ones vector runs in BLAS
at memory speed, 10-20x faster, on blocks of ROWS_PER_SUM rows whose float32 sums are then
added in float64, so 10^5+ rows keep ~1e-7 relative accuracy.
"""

from __future__ import annotations

import math

import numpy as np

from tapeflow.kernels._jit import jit
from tapeflow.kernels.rows import channel_window

ROWS_PER_SUM = 512


def channel_sums(g: np.ndarray) -> np.ndarray:
    """Sum over every axis but the last, in g's dtype (a channel slice read in place)."""
    if g.dtype not in (np.float32, np.float64) or g.ndim < 2:
        return g.sum(axis=tuple(range(g.ndim - 1)))
    c = g.shape[-1]
    base, first = channel_window(g)
    rows = base[:, first:first + c]
    whole = rows.shape[0] // ROWS_PER_SUM * ROWS_PER_SUM
    blocks = np.matmul(np.ones(ROWS_PER_SUM, g.dtype),
                       rows[:whole].reshape(-1, ROWS_PER_SUM, c))
    total = blocks.sum(axis=0, dtype=np.float64) + rows[whole:].sum(axis=0, dtype=np.float64)
    return total.astype(g.dtype)


LEADING_MIN = 1 << 16  # elements: below, NumPy's reduction is as fast


def leading_sums(g: np.ndarray, shape: tuple) -> np.ndarray | None:
    """g summed over its leading axes down to `shape` (g's shape ends with it), by the blocked
    BLAS sums above; None where NumPy's reduction should do it (small, not float, or not a
    plain leading-axes sum). A bias's gradient: W9's 13 took 45-75 us each as NumPy's row
    reduction over [2048, 128-256], 22-39 us here (and ~10x closer to the exact sums)."""
    if (g.dtype not in (np.float32, np.float64) or g.size < LEADING_MIN or not shape
            or g.ndim <= len(shape) or tuple(g.shape[g.ndim - len(shape):]) != tuple(shape)):
        return None
    return channel_sums(g.reshape(-1, math.prod(shape))).reshape(shape)


@jit()
def _add_bias_nb(y2, b, relu):
    m, c = y2.shape
    for i in range(m):
        for j in range(c):
            v = y2[i, j] + b[j]
            y2[i, j] = v if not relu or v > 0 or v != v else 0.0


def epilogue(b: np.ndarray, relu: bool = False):
    """A product's epilogue (``kernels.matmul.Epilogue``): each slice of the output, columns
    lo:hi, gets b[lo:hi] added along its last axis (then max(., 0) if `relu`), in place."""
    def apply(out: np.ndarray, lo: int, hi: int) -> None:
        part = b[lo:hi].astype(out.dtype, copy=False)
        if _add_bias_nb is not None and out.dtype in (np.float32, np.float64) and \
                out.flags.c_contiguous:
            _add_bias_nb(out.reshape(-1, out.shape[-1]), part, relu)
            return
        np.add(out, part, out=out)
        if relu:
            np.maximum(out, 0, out=out)

    return apply


def add_bias_inplace(y: np.ndarray, b: np.ndarray, relu: bool = False) -> np.ndarray:
    """y += b along the last axis, then max(y, 0) if `relu` (NaN stays NaN, as np.maximum);
    `y` must be a fresh, C-contiguous array the caller owns. Returns y."""
    b = b.astype(y.dtype, copy=False)
    if _add_bias_nb is not None and y.dtype in (np.float32, np.float64) and y.flags.c_contiguous:
        _add_bias_nb(y.reshape(-1, y.shape[-1]), b, relu)
        return y
    y += b
    if relu:
        np.maximum(y, 0, out=y)
    return y
