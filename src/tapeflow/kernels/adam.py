"""Adam's update of one variable in one pass (numba), where NumPy makes twelve.

NumPy computes m, v and the new value in twelve whole-array passes (a subtract, scalings,
a square, a sqrt, a division...), each reading and writing the variable's size in memory;
for the seed MLP's 784x128 kernel that was as long as all six of the step's matrix products.
The loop below reads g, m, v and the variable once and writes the three new arrays once,
doing the same float operations in the same order, in the variable's dtype, so it gives
NumPy's bits (``tests/ops/test_adam_kernel.py``).
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit


@jit(error_model="numpy")  # no division-by-zero check: the loop vectorizes (3x faster)
def _adam_nb(g, m, v, w, new_m, new_v, new_w, lr_t, c1, c2, eps):
    for i in range(g.size):
        gi = g[i]
        mi = (gi - m[i]) * c1 + m[i]
        vi = (gi * gi - v[i]) * c2 + v[i]
        new_m[i] = mi
        new_v[i] = vi
        new_w[i] = w[i] - mi * lr_t / (np.sqrt(vi) + eps)


def applies(dtype: np.dtype) -> bool:
    """Whether the one-pass loop runs for variables of `dtype` (contiguous arrays)."""
    return _adam_nb is not None and dtype in (np.float32, np.float64)


def update(grad: np.ndarray, m: np.ndarray, v: np.ndarray, w: np.ndarray, lr_t: np.generic,
           beta_1: float, beta_2: float, epsilon: float) -> tuple | None:
    """(new m, new v, new value): m + (g - m)(1 - b1), v + (g^2 - v)(1 - b2),
    w - m' lr_t / (sqrt(v') + eps); None where the loop does not apply (no numba, a dtype it
    has no loop for, or arrays that are not one contiguous block), so the caller uses NumPy."""
    dtype = w.dtype
    if not applies(dtype):
        return None
    arrays = (grad, m, v, w)
    if any(a.dtype != dtype or a.shape != w.shape or not a.flags.c_contiguous for a in arrays):
        return None
    kind = dtype.type
    new_m, new_v, new_w = np.empty_like(w), np.empty_like(w), np.empty_like(w)
    _adam_nb(grad.reshape(-1), m.reshape(-1), v.reshape(-1), w.reshape(-1), new_m.reshape(-1),
             new_v.reshape(-1), new_w.reshape(-1), kind(lr_t), kind(1.0 - beta_1),
             kind(1.0 - beta_2), kind(epsilon))
    return new_m, new_v, new_w
