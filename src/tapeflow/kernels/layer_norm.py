"""Layer normalization over the last axis, softmax and its gradient, each in compiled passes.

Why: written in ops, a LayerNormalization over [32, 64, 128] is ~10 passes forward (moments,
subtract, rsqrt, scale, shift) and ~20 backward, each a fresh [32, 64, 128] array; the
softmax gradient is four. Here each row (the last axis) is read once or twice while it is in
cache. Rows are reduced with float64 sums in an order fixed at compile time (SIMD lanes:
the loops may reassociate, 543 -> 170 us for W9's [32, 64, 128]), so results do not depend on
the machine's load.

Forward: y = (x - mean) * inv * gamma + beta with inv = 1 / sqrt(var + eps), the biased
variance over the row (as Keras's LayerNormalization); mean and inv are kept for the backward
pass, which gives dx, dgamma and dbeta.

Softmax over the last axis: a compiled pass subtracts each row's maximum, NumPy's SIMD exp
runs over the whole array (a compiled scalar exp costs ~100x more), and a compiled pass
divides each row by its sum: 0.54 ms for W9's [32, 4, 64, 64] scores, 1.2 ms in NumPy's row
reductions (the rows are short, 64). The loops may reassociate (SIMD) but keep infinities and
NaNs as IEEE has them, so masked (-inf) scores still give 0.

Every kernel here works on rows, so each is cut into row slices over the idle cores
(``kernels.parallel``: 2 MB of work or more, by its size alone): W9's layer norms, softmaxes
and their gradients ran on one core while the other waited for the next split product. The
layer norm's dgamma and dbeta are summed per slice, then the slices' sums in order.
"""

from __future__ import annotations

import math

import numpy as np

from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit

_SIMD = {"reassoc", "nsz", "arcp", "contract"}  # no "nnan"/"ninf": IEEE infinities and NaNs


@jit(fastmath=_SIMD)
def _forward_nb(x, gamma, beta, eps, y, mean, inv):
    rows, d = x.shape
    for r in range(rows):
        s = 0.0
        for k in range(d):
            s += x[r, k]
        m = s / d
        q = 0.0
        for k in range(d):
            q += (x[r, k] - m) * (x[r, k] - m)
        iv = 1.0 / math.sqrt(q / d + eps)
        for k in range(d):
            y[r, k] = (x[r, k] - m) * iv * gamma[k] + beta[k]
        mean[r] = m
        inv[r] = iv


@jit(fastmath=_SIMD)
def _backward_nb(g, x, gamma, mean, inv, dx, dgamma, dbeta):
    rows, d = x.shape
    for k in range(d):
        dgamma[k] = 0.0
        dbeta[k] = 0.0
    for r in range(rows):
        m, iv = mean[r], inv[r]
        a = 0.0  # sum of dxhat
        b = 0.0  # sum of dxhat * xhat
        for k in range(d):
            xhat = (x[r, k] - m) * iv
            dxhat = g[r, k] * gamma[k]
            a += dxhat
            b += dxhat * xhat
            dgamma[k] += g[r, k] * xhat
            dbeta[k] += g[r, k]
        a /= d
        b /= d
        for k in range(d):
            xhat = (x[r, k] - m) * iv
            dx[r, k] = iv * (g[r, k] * gamma[k] - a - xhat * b)


@jit(fastmath=_SIMD)
def _shift_nb(x, e):
    """e = x - the row's maximum."""
    for r in range(x.shape[0]):
        m = x[r, 0]
        for k in range(1, x.shape[1]):
            m = max(m, x[r, k])
        for k in range(x.shape[1]):
            e[r, k] = x[r, k] - m


@jit(fastmath=_SIMD)
def _normalize_nb(e):
    """Each row divided by its sum."""
    for r in range(e.shape[0]):
        s = 0.0
        for k in range(e.shape[1]):
            s += e[r, k]
        inv = 1.0 / s
        for k in range(e.shape[1]):
            e[r, k] *= inv


@jit(fastmath=_SIMD)
def _softmax_grad_nb(g, y, dx):
    rows, d = y.shape
    for r in range(rows):
        s = 0.0
        for k in range(d):
            s += g[r, k] * y[r, k]
        for k in range(d):
            dx[r, k] = (g[r, k] - s) * y[r, k]


def _compiled(*arrays: np.ndarray) -> bool:
    return _forward_nb is not None and all(a.dtype in (np.float32, np.float64) for a in arrays)


def _rows(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1, a.shape[-1])


def forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float):
    """(y, mean, inv) over x's last axis; mean and inv have x's shape without the last axis."""
    rows = _rows(x)
    y = np.empty_like(rows)
    mean = np.empty(rows.shape[0], x.dtype)
    inv = np.empty(rows.shape[0], x.dtype)
    if _compiled(x, gamma, beta):
        gamma, beta = gamma.astype(x.dtype), beta.astype(x.dtype)

        def part(lo: int, hi: int) -> None:
            _forward_nb(rows[lo:hi], gamma, beta, eps, y[lo:hi], mean[lo:hi], inv[lo:hi])

        parallel.split(rows.shape[0], 2 * rows.nbytes, part)
    else:
        m = rows.mean(axis=1, dtype=np.float64)
        c = rows - m[:, None]
        iv = 1.0 / np.sqrt((c * c).mean(axis=1) + eps)
        y[...] = c * iv[:, None] * gamma + beta
        mean[...], inv[...] = m, iv
    lead = x.shape[:-1]
    return y.reshape(x.shape), mean.reshape(lead), inv.reshape(lead)


def backward(g: np.ndarray, x: np.ndarray, gamma: np.ndarray, mean: np.ndarray,
             inv: np.ndarray):
    """(dx, dgamma, dbeta) of ``forward``'s y."""
    rows, g_rows = _rows(x), _rows(g.astype(x.dtype, copy=False))
    mean, inv = mean.reshape(-1), inv.reshape(-1)
    d = rows.shape[1]
    if _compiled(x, gamma):
        dx = np.empty_like(rows)
        gamma = gamma.astype(x.dtype)

        def part(lo: int, hi: int) -> tuple:
            dgamma, dbeta = np.empty(d, x.dtype), np.empty(d, x.dtype)
            _backward_nb(g_rows[lo:hi], rows[lo:hi], gamma, mean[lo:hi], inv[lo:hi], dx[lo:hi],
                         dgamma, dbeta)
            return dgamma, dbeta

        # the slices depend on the size alone: their partial sums add up the same way whether
        # they ran on two cores or one after another
        parts = parallel.split(rows.shape[0], 3 * rows.nbytes, part)
        dgamma, dbeta = parts[0]
        for pg, pb in parts[1:]:
            dgamma += pg
            dbeta += pb
    else:
        xhat = (rows - mean[:, None]) * inv[:, None]
        dxhat = g_rows * gamma
        dx = inv[:, None] * (dxhat - dxhat.mean(axis=1, keepdims=True)
                             - xhat * (dxhat * xhat).mean(axis=1, keepdims=True))
        dgamma, dbeta = (g_rows * xhat).sum(axis=0), g_rows.sum(axis=0)
    return dx.reshape(x.shape), dgamma, dbeta


def softmax(x: np.ndarray) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) over the last axis."""
    if not _compiled(x) or x.size == 0 or x.shape[-1] == 0:
        e = x - x.max(axis=-1, keepdims=True) if x.size else np.array(x, copy=True)
        np.exp(e, out=e)
        e /= e.sum(axis=-1, keepdims=True)
        return e
    rows = _rows(x)
    e = np.empty_like(rows)

    def part(lo: int, hi: int) -> None:
        _shift_nb(rows[lo:hi], e[lo:hi])
        np.exp(e[lo:hi], out=e[lo:hi])
        _normalize_nb(e[lo:hi])

    parallel.split(rows.shape[0], 2 * rows.nbytes, part)
    return e.reshape(x.shape)


def softmax_grad(g: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(g - sum(g * y)) * y over the last axis: the gradient of y = softmax(x)."""
    if not _compiled(y) or g.dtype != y.dtype:
        return (g - (g * y).sum(axis=-1, keepdims=True)) * y
    rows, g_rows = _rows(y), _rows(g)
    dx = np.empty_like(rows)

    def part(lo: int, hi: int) -> None:
        _softmax_grad_nb(g_rows[lo:hi], rows[lo:hi], dx[lo:hi])

    parallel.split(rows.shape[0], 3 * rows.nbytes, part)
    return dx.reshape(y.shape)
