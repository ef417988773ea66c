"""Activation gradients in one compiled pass (NumPy needs a mask array and a second pass)."""

from __future__ import annotations

import numpy as np

from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit


@jit()
def _relu_grad_nb(g, out, res):
    for i in range(g.size):
        res[i] = g[i] * (out[i] > 0)


def relu_grad(g: np.ndarray, out: np.ndarray) -> np.ndarray:
    """g * (out > 0), as TF's ReluGrad (so a NaN gradient stays NaN where out <= 0)."""
    if (_relu_grad_nb is None or g.shape != out.shape or g.dtype != out.dtype
            or g.dtype not in (np.float32, np.float64)):
        return np.multiply(g, np.greater(out, 0))
    res = np.empty(g.shape, dtype=g.dtype)
    g1, out1, res1 = (np.ascontiguousarray(a).reshape(-1) for a in (g, out, res))
    parallel.split(res1.size, 3 * res.nbytes,
                   lambda lo, hi: _relu_grad_nb(g1[lo:hi], out1[lo:hi], res1[lo:hi]))
    return res
