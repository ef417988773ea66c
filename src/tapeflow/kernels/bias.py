"""Channels-last bias kernels: the fused in-place bias (+ ReLU), and BiasAddGrad's sums.

A convolution's fresh output gets its bias (and ReLU) in one in-place pass instead of two new
arrays (BiasAdd, then Relu), which the fusion pass arranges (``ops.fused_ops``).

NumPy reduces the leading axes of an (N, H, W, C) array row by row in the input's precision;
the compiled loop reads the array once, 3-5x faster, and float64 accumulators keep float32
sums over 10^5 rows accurate to ~1e-7 relative instead of ~1e-4.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit


@jit()
def _column_sums_nb(g2, acc):
    m, c = g2.shape
    for i in range(m):
        for j in range(c):
            acc[j] += g2[i, j]


def channel_sums(g: np.ndarray) -> np.ndarray:
    """Sum over every axis but the last, in g's dtype."""
    c = g.shape[-1]
    if _column_sums_nb is None or g.dtype not in (np.float32, np.float64) or g.ndim < 2:
        return g.sum(axis=tuple(range(g.ndim - 1)))
    acc = np.zeros(c)
    _column_sums_nb(np.ascontiguousarray(g).reshape(-1, c), acc)
    return acc.astype(g.dtype)


@jit()
def _add_bias_nb(y2, b, relu):
    m, c = y2.shape
    for i in range(m):
        for j in range(c):
            v = y2[i, j] + b[j]
            y2[i, j] = v if not relu or v > 0 or v != v else 0.0


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
