"""Activation gradients in one compiled pass (NumPy needs a mask array and a second pass)."""

from __future__ import annotations

import numpy as np

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
    _relu_grad_nb(np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(out).reshape(-1),
                  res.reshape(-1))
    return res
