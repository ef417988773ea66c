"""Training-mode batch normalization over all but the last (channel) axis, and its gradient.

Statistics are accumulated in float64 (two passes: mean, then centred variance) so float32
batches of 10^5+ rows keep full precision; the compiled loops read each array once per pass
and allocate nothing the size of the input.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit


@jit()
def _stats_nb(x2, mean, var):
    m, c = x2.shape
    acc = np.zeros(c)
    for i in range(m):
        for j in range(c):
            acc[j] += x2[i, j]
    for j in range(c):
        mean[j] = acc[j] / m
        acc[j] = 0.0
    for i in range(m):
        for j in range(c):
            d = x2[i, j] - mean[j]
            acc[j] += d * d
    for j in range(c):
        var[j] = acc[j] / m


@jit()
def _grad_sums_nb(g2, x2, mean, sum_g, sum_gx):
    m, c = x2.shape
    for i in range(m):
        for j in range(c):
            gv = g2[i, j]
            sum_g[j] += gv
            sum_gx[j] += gv * (x2[i, j] - mean[j])


@jit()
def _affine_nb(x2, a, b, out):
    m, c = x2.shape
    for i in range(m):
        for j in range(c):
            out[i, j] = x2[i, j] * a[j] + b[j]


@jit()
def _affine2_nb(g2, x2, k, u, v, out):
    m, c = x2.shape
    for i in range(m):
        for j in range(c):
            out[i, j] = g2[i, j] * k[j] + x2[i, j] * u[j] + v[j]


def _affine(x2: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x2 * a + b per column, in one pass over x2 when compiled."""
    a, b = a.astype(x2.dtype), b.astype(x2.dtype)
    if _affine_nb is not None:
        out = np.empty_like(x2)
        _affine_nb(x2, a, b, out)
        return out
    out = x2 * a
    out += b
    return out


def moments(x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and (biased) variance of a (rows, C) array, in float64."""
    c = x2.shape[1]
    mean, var = np.empty(c), np.empty(c)
    if _stats_nb is not None:
        _stats_nb(x2, mean, var)
        return mean, var
    mean[:] = x2.mean(axis=0, dtype=np.float64)
    d = x2 - mean.astype(x2.dtype)
    var[:] = np.einsum("ij,ij->j", d, d, dtype=np.float64) / max(x2.shape[0], 1)
    return mean, var


def forward(x: np.ndarray, scale: np.ndarray, offset: np.ndarray, epsilon: float):
    """(y, batch mean, unbiased batch variance, 1/sqrt(biased variance + eps)), as TF's
    FusedBatchNorm: y is normalized with the biased variance, while the returned variance has
    Bessel's correction because it feeds the moving average."""
    c = x.shape[-1]
    x2 = np.ascontiguousarray(x).reshape(-1, c)
    m = x2.shape[0]
    mean, var = moments(x2)
    inv = 1.0 / np.sqrt(var + epsilon)
    a = scale.astype(np.float64) * inv
    b = offset.astype(np.float64) - mean * a
    y = _affine(x2, a, b)
    unbiased = var * (m / max(m - 1, 1))
    return (y.reshape(x.shape), mean.astype(x.dtype), unbiased.astype(x.dtype),
            inv.astype(x.dtype))


def backward(g: np.ndarray, x: np.ndarray, scale: np.ndarray, mean: np.ndarray,
             inv: np.ndarray):
    """(dx, dscale, doffset) of ``forward``'s y given its gradient `g`."""
    c = x.shape[-1]
    x2 = np.ascontiguousarray(x).reshape(-1, c)
    g2 = np.ascontiguousarray(g).reshape(-1, c)
    m = x2.shape[0]
    mean64, inv64 = mean.astype(np.float64), inv.astype(np.float64)
    sum_g, sum_gx = np.zeros(c), np.zeros(c)
    if _grad_sums_nb is not None:
        _grad_sums_nb(g2, x2, mean64, sum_g, sum_gx)
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
    if _affine2_nb is not None:
        dx = np.empty_like(x2)
        _affine2_nb(g2, x2, k32, u32, v32, dx)
    else:
        dx = _affine(x2, u32, v32)
        dx += g2 * k32
    return dx.reshape(x.shape), dscale.astype(scale.dtype), sum_g.astype(scale.dtype)
