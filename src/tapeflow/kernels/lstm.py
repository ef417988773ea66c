"""A whole LSTM sequence in one kernel, forward and backward through time, time-major.

Why: unrolled into ops, one LSTM(128) step over 50 tokens is ~600 small ops forward and
backward (a matmul, a split, five activations, products and sums per step), each its own pass
over a [64, 512] array and its own dispatch. Here each time step is one BLAS product
(h @ recurrent_kernel, or dz @ recurrent_kernel^T going back) and one compiled pass over the
step's gates; the recurrent kernel's gradient is one product over all steps at the end.

Keras's gate order (input, forget, cell, output), sigmoid gates and tanh activations. Shapes
are time-major, as ONNX's and cuDNN's LSTMs are: projected [T, B, 4U] (x @ kernel for every
step), bias [4U], h0 and c0 [B, U], the recurrent kernel R [U, 4U]. A step's slice of every
array ([B, 4U] or [B, U]) is then one contiguous block: the product writes its gates in place
and the backward pass streams through memory (batch-major, a step's 64 rows lay 100 KB apart
and its gate gradients took 4.3 of W10's backward 14 ms; time-major 2 ms). The forward pass
saves every step's cell state, its tanh and the activated gates, so the backward pass computes
no transcendental function; the bias is added in the step's pass and its gradient summed in
the backward one (no separate pass over [T, B, 4U] either way).

tanh: float32 uses Eigen's rational approximation (the one TensorFlow's CPU kernels use; within
2e-7 of the exact value), which compiles to SIMD code: one fused pass per
step with it took 18 us for W10's [64, 512] gates, where NumPy's SIMD tanh alone took 12 us and
the five passes around it 27 us more. float64 uses the exact ``math.tanh``. A sigmoid is
0.5 * tanh(x / 2) + 0.5.

The sequences of a batch are independent, so a large enough batch runs as slices of rows, each
its whole recurrence forward or backward on an idle core (``kernels.parallel``): the per-step
products are too small (W10: [64, 128] x [128, 512], ~90 us) to split each on its own. The
slices depend on the size alone, so the results are the same bits on a busy machine.
"""

from __future__ import annotations

import math

import numpy as np

from tapeflow.framework.threads import intra_op_threads
from tapeflow.kernels import _jit, parallel
from tapeflow.kernels._jit import jit

_SIMD = {"nsz", "arcp", "contract"}  # no reassociation (the bias sums keep their order)
_TANH_CLAMP = np.float32(7.90531110763549805)  # tanh rounds to +-1 in float32 beyond this


def _tanh(x):
    """tanh of one element inside the compiled loops (the overload below picks the form)."""
    return np.tanh(x)


def _tanh_float32(x):
    """Eigen's float32 tanh: a [13/6] rational function of the clamped argument (NaN stays
    NaN through the clamp)."""
    c = min(max(x, -_TANH_CLAMP), _TANH_CLAMP)
    c2 = c * c
    p = c2 * np.float32(-2.76076847742355e-16) + np.float32(2.00018790482477e-13)
    p = c2 * p + np.float32(-8.60467152213735e-11)
    p = c2 * p + np.float32(5.12229709037114e-08)
    p = c2 * p + np.float32(1.48572235717979e-05)
    p = c2 * p + np.float32(6.37261928875436e-04)
    p = c2 * p + np.float32(4.89352455891786e-03)
    q = c2 * np.float32(1.19825839466702e-06) + np.float32(1.18534705686654e-04)
    q = c2 * q + np.float32(2.26843463243900e-03)
    q = c2 * q + np.float32(4.89352518554385e-03)
    return c * p / q


def _tanh_exact(x):
    return math.tanh(x)


if _jit._numba is not None:
    from numba.core import types
    from numba.extending import overload

    @overload(_tanh, inline="always")
    def _tanh_overload(x):
        return _tanh_float32 if x == types.float32 else _tanh_exact


@jit(fastmath=_SIMD, error_model="numpy")
def _step_nb(z, p, bias, c_prev, c, tc, h):
    """One step of rows: z holds h_{t-1} @ R and becomes the activated gates; then the cell
    state c, its tanh tc and the output h. p is the step's input projection. Each gate block
    is taken as its own 1-D slice first: loops over index ranges not starting at 0 did not
    vectorize (49 us for W10's gates, 10 us sliced)."""
    units = c.shape[1]
    half = np.float32(0.5)
    for b in range(z.shape[0]):
        zb, pb = z[b], p[b]
        for k in range(2 * units):  # input and forget gates: sigmoids
            zb[k] = half * _tanh(half * (zb[k] + pb[k] + bias[k])) + half
        zg, pg, bg = zb[2 * units:3 * units], pb[2 * units:3 * units], bias[2 * units:3 * units]
        for k in range(units):  # the cell candidate: tanh
            zg[k] = _tanh(zg[k] + pg[k] + bg[k])
        zo, po, bo = zb[3 * units:], pb[3 * units:], bias[3 * units:]
        for k in range(units):  # output gate: sigmoid
            zo[k] = half * _tanh(half * (zo[k] + po[k] + bo[k])) + half
        zi, zf = zb[:units], zb[units:2 * units]
        cp, cb, tb, hb = c_prev[b], c[b], tc[b], h[b]
        for u in range(units):
            cb[u] = zf[u] * cp[u] + zi[u] * zg[u]
        for u in range(units):
            tb[u] = _tanh(cb[u])
        for u in range(units):
            hb[u] = zo[u] * tb[u]


@jit(fastmath=_SIMD, error_model="numpy")
def _grad_step_nb(gates, c_prev, tc, g_h, dh, dc, dz, db):
    """One step of rows backwards: dh (later steps' part, plus g_h) and dc through the gates;
    writes the gate arguments' gradient dz, dc for the step before, and adds dz's rows to the
    bias gradient db (float64)."""
    units = dh.shape[1]
    one = np.float32(1.0)
    for b in range(dh.shape[0]):
        row, z = gates[b], dz[b]
        gi, gf, gg, go = row[:units], row[units:2 * units], row[2 * units:3 * units], \
            row[3 * units:]
        zi, zf, zg, zo = z[:units], z[units:2 * units], z[2 * units:3 * units], z[3 * units:]
        cp, tcb, ghb, dhb, dcb = c_prev[b], tc[b], g_h[b], dh[b], dc[b]
        for u in range(units):
            i = gi[u]
            f = gf[u]
            g = gg[u]
            o = go[u]
            t = tcb[u]
            h_grad = dhb[u] + ghb[u]
            c_grad = dcb[u] + h_grad * o * (one - t * t)
            dcb[u] = c_grad * f
            zi[u] = c_grad * g * i * (one - i)
            zf[u] = c_grad * cp[u] * f * (one - f)
            zg[u] = c_grad * i * (one - g * g)
            zo[u] = h_grad * t * o * (one - o)
        for k in range(4 * units):
            db[k] += z[k]


def _step_np(z, p, bias, c_prev, c, tc, h):
    units = c.shape[1]
    z += p
    z += bias
    z[:, :2 * units] *= 0.5
    z[:, 3 * units:] *= 0.5
    np.tanh(z, out=z)
    for gate in (z[:, :2 * units], z[:, 3 * units:]):
        gate *= 0.5
        gate += 0.5
    i, f, g, o = (z[:, k * units:(k + 1) * units] for k in range(4))
    c[...] = f * c_prev + i * g
    np.tanh(c, out=tc)
    np.multiply(o, tc, out=h)


def _grad_step_np(gates, c_prev, tc, g_h, dh, dc, dz, db):
    units = dh.shape[1]
    i, f, g, o = (gates[:, k * units:(k + 1) * units] for k in range(4))
    h_grad = dh + g_h
    c_grad = dc + h_grad * o * (1 - tc * tc)
    dc[...] = c_grad * f
    dz[...] = np.concatenate([c_grad * g * i * (1 - i), c_grad * c_prev * f * (1 - f),
                              c_grad * i * (1 - g * g), h_grad * tc * o * (1 - o)], axis=1)
    db += dz.sum(axis=0, dtype=np.float64)


def _loops(dtype: np.dtype) -> tuple:
    if _step_nb is not None and dtype in (np.float32, np.float64):
        return _step_nb, _grad_step_nb
    return _step_np, _grad_step_np


SPLIT_FLOPS = 4e6  # a sequence's recurrent products below this run in one slice


def _batch_slices(batch: int, steps: int, units: int) -> int:
    """How many batch slices the recurrence is cut into (its size alone decides): the rows of
    a batch are independent sequences, so each slice runs the whole recurrence on its own
    core when one is idle (``kernels.parallel``), or after the other on this thread."""
    if 2.0 * batch * steps * units * 4 * units < SPLIT_FLOPS:
        return 1
    return min(intra_op_threads(), batch // 8 or 1)


def forward(p: np.ndarray, h0: np.ndarray, c0: np.ndarray, r: np.ndarray, bias: np.ndarray):
    """(hs [T, B, U], h_T, c_T, cs, tanh(cs), gates [T, B, 4U]) of the sequence."""
    steps, batch, _ = p.shape
    units = r.shape[0]
    dtype = np.result_type(p, h0, c0, r, bias)
    step = _loops(dtype)[0]
    r, p, bias = (np.ascontiguousarray(a, dtype) for a in (r, p, bias))
    h0, c0 = (np.ascontiguousarray(a, dtype) for a in (h0, c0))
    hs, cs, tcs = (np.empty((steps, batch, units), dtype) for _ in range(3))
    gates = np.empty((steps, batch, 4 * units), dtype)

    def rows(lo: int, hi: int) -> None:  # the whole recurrence of sequences lo:hi
        h_prev, c_prev = h0[lo:hi], c0[lo:hi]
        for t in range(steps):
            z = gates[t, lo:hi]
            np.dot(h_prev, r, out=z)
            step(z, p[t, lo:hi], bias, c_prev, cs[t, lo:hi], tcs[t, lo:hi], hs[t, lo:hi])
            h_prev, c_prev = hs[t, lo:hi], cs[t, lo:hi]

    if steps:
        parallel.split(batch, 0, rows, slices=_batch_slices(batch, steps, units))
        return hs, hs[-1].copy(), cs[-1].copy(), cs, tcs, gates
    return hs, h0.copy(), c0.copy(), cs, tcs, gates


def backward(g_hs, g_h, g_c, h0, c0, r, hs, cs, tcs, gates):
    """(d projected [T, B, 4U], dh0, dc0, dR, d bias) from the gradients of hs, h_T, c_T; a
    scalar `g_hs` (0) stands for no gradient of hs, read as one [B, U] block of zeros."""
    steps, batch, units = hs.shape
    dtype = hs.dtype
    grad = _loops(dtype)[1]
    no_g_hs = np.zeros((batch, units), dtype) if np.ndim(g_hs) == 0 else None
    g_hs = np.ascontiguousarray(g_hs, dtype)
    r_t = np.ascontiguousarray(np.asarray(r, dtype).T)
    dh = np.array(g_h, dtype, copy=True, order="C")
    dc = np.array(g_c, dtype, copy=True, order="C")
    dzs = np.empty((steps, batch, 4 * units), dtype)
    c0 = np.ascontiguousarray(c0, dtype)

    def rows(lo: int, hi: int) -> np.ndarray:  # back through time for sequences lo:hi
        db = np.zeros(4 * units, np.float64)
        dhb, dcb = dh[lo:hi], dc[lo:hi]
        for t in range(steps - 1, -1, -1):
            c_prev = cs[t - 1, lo:hi] if t > 0 else c0[lo:hi]
            g_t = g_hs[t, lo:hi] if no_g_hs is None else no_g_hs[lo:hi]
            grad(gates[t, lo:hi], c_prev, tcs[t, lo:hi], g_t, dhb, dcb, dzs[t, lo:hi], db)
            np.dot(dzs[t, lo:hi], r_t, out=dhb)
        return db

    db = sum(parallel.split(batch, 0, rows, slices=_batch_slices(batch, steps, units)))
    h_prev = np.empty_like(hs)
    if steps:
        h_prev[0] = h0
        h_prev[1:] = hs[:-1]
    h_rows = h_prev.reshape(-1, units)
    dz_rows = dzs.reshape(-1, 4 * units)
    dr = np.empty((units, 4 * units), dtype)

    def units_block(lo: int, hi: int) -> None:  # dR's rows lo:hi, a contiguous block
        np.dot(h_rows[:, lo:hi].T, dz_rows, out=dr[lo:hi])

    parallel.split(units, h_rows.nbytes + dzs.nbytes, units_block)
    return dzs, dh, dc, dr, np.asarray(db, dtype)
