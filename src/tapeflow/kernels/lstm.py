"""A whole LSTM sequence in one kernel, forward and backward through time.

Why: unrolled into ops, one LSTM(128) step over 50 tokens is ~600 small ops forward and
backward (a matmul, a split, five activations, products and sums per step), each its own pass
over a [64, 512] array and its own dispatch. Here each time step is one BLAS product
(h @ recurrent_kernel, or dz @ recurrent_kernel^T going back) and one compiled elementwise pass
for the four gates; the recurrent kernel's gradient is one product over all steps at the end.

Keras's gate order (input, forget, cell, output), sigmoid gates and tanh activations. Shapes:
projected [B, T, 4U] (x @ kernel + bias for every step), h0 and c0 [B, U], the recurrent
kernel R [U, 4U]. The forward pass saves every step's cell state, its tanh and the activated
gates, so the backward pass computes no transcendental function at all.

The tanh calls are NumPy's (SIMD: ~0.4 ns per float32 element, where a compiled scalar loop
calling tanh/exp took ~40 ns); a sigmoid is 0.5 * tanh(x / 2) + 0.5, so one tanh pass over
the step's [B, 4U] pre-activations serves all four gates. The compiled loops do the rest:
adding the step's input projection, the cell update, the output.

The sequences of a batch are independent, so a large enough batch runs as slices of rows, each
its whole recurrence forward or backward on an idle core (``kernels.parallel``): the per-step
products are too small (W10: [64, 128] x [128, 512], ~90 us) to split each on its own. The
slices depend on the size alone, so the results are the same bits on a busy machine.
"""

from __future__ import annotations

import numpy as np

from tapeflow.framework.threads import intra_op_threads
from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit


@jit()
def _pre_nb(z, p, t, scale):
    """z = (z + p[:, t]) * scale: each gate's tanh argument (x / 2 for the sigmoid gates)."""
    for b in range(z.shape[0]):
        for k in range(z.shape[1]):
            z[b, k] = (z[b, k] + p[b, t, k]) * scale[k]


@jit()
def _cell_nb(z, t, half, c, gates, cs):
    """z holds tanh of the step's gate arguments: the gates, and c = f * c + i * g."""
    units = c.shape[1]
    for b in range(c.shape[0]):
        for u in range(units):
            i = half * z[b, u] + half
            f = half * z[b, units + u] + half
            g = z[b, 2 * units + u]
            o = half * z[b, 3 * units + u] + half
            gates[b, t, u] = i
            gates[b, t, units + u] = f
            gates[b, t, 2 * units + u] = g
            gates[b, t, 3 * units + u] = o
            cn = f * c[b, u] + i * g
            c[b, u] = cn
            cs[b, t, u] = cn


@jit()
def _out_nb(tc, gates, t, h, hs, tcs):
    """h = o * tanh(c), saved with tanh(c) for the backward pass."""
    units = h.shape[1]
    for b in range(h.shape[0]):
        for u in range(units):
            hn = gates[b, t, 3 * units + u] * tc[b, u]
            h[b, u] = hn
            hs[b, t, u] = hn
            tcs[b, t, u] = tc[b, u]


@jit()
def _grad_nb(t, one, g_hs, gates, c_prev, tcs, dh, dc, dzs):
    """Step t backwards: dh (later steps' part, plus g_hs[:, t]) and dc through the gates;
    writes the gate arguments' gradient into dzs[:, t] and dc for step t - 1. `c_prev` is
    step t - 1's cell state [B, U] (c0 at t = 0). Each row's gate blocks are taken as 1-D
    slices first, so the inner loop is unit-stride (it vectorizes: 4.3 -> 3.7 ms for W10)."""
    units = dh.shape[1]
    for b in range(dh.shape[0]):
        row, z = gates[b, t], dzs[b, t]
        gi, gf, gg, go = row[:units], row[units:2 * units], row[2 * units:3 * units], \
            row[3 * units:]
        zi, zf, zg, zo = z[:units], z[units:2 * units], z[2 * units:3 * units], z[3 * units:]
        cp, tcb, ghb, dhb, dcb = c_prev[b], tcs[b, t], g_hs[b, t], dh[b], dc[b]
        for u in range(units):
            i = gi[u]
            f = gf[u]
            g = gg[u]
            o = go[u]
            tc = tcb[u]
            h_grad = dhb[u] + ghb[u]
            c_grad = dcb[u] + h_grad * o * (one - tc * tc)
            dcb[u] = c_grad * f
            zi[u] = c_grad * g * i * (one - i)
            zf[u] = c_grad * cp[u] * f * (one - f)
            zg[u] = c_grad * i * (one - g * g)
            zo[u] = h_grad * tc * o * (one - o)


def _pre_np(z, p, t, scale):
    np.multiply(z + p[:, t], scale, out=z)


def _cell_np(z, t, half, c, gates, cs):
    units = c.shape[1]
    gates[:, t] = z
    gates[:, t, :2 * units] = half * z[:, :2 * units] + half
    gates[:, t, 3 * units:] = half * z[:, 3 * units:] + half
    i, f, g = (gates[:, t, k * units:(k + 1) * units] for k in range(3))
    c[...] = f * c + i * g
    cs[:, t] = c


def _out_np(tc, gates, t, h, hs, tcs):
    h[...] = gates[:, t, 3 * h.shape[1]:] * tc
    hs[:, t], tcs[:, t] = h, tc


def _grad_np(t, one, g_hs, gates, c_prev, tcs, dh, dc, dzs):
    units = dh.shape[1]
    i, f, g, o = (gates[:, t, k * units:(k + 1) * units] for k in range(4))
    tc = tcs[:, t]
    h_grad = dh + g_hs[:, t]
    c_grad = dc + h_grad * o * (one - tc * tc)
    dc[...] = c_grad * f
    dzs[:, t] = np.concatenate([c_grad * g * i * (one - i), c_grad * c_prev * f * (one - f),
                                c_grad * i * (one - g * g), h_grad * tc * o * (one - o)], axis=1)


def _loops(dtype: np.dtype) -> tuple:
    if _pre_nb is not None and dtype in (np.float32, np.float64):
        return _pre_nb, _cell_nb, _out_nb, _grad_nb
    return _pre_np, _cell_np, _out_np, _grad_np


SPLIT_FLOPS = 4e6  # a sequence's recurrent products below this run in one slice


def _batch_slices(batch: int, steps: int, units: int) -> int:
    """How many batch slices the recurrence is cut into (its size alone decides): the rows of
    a batch are independent sequences, so each slice runs the whole recurrence on its own
    core when one is idle (``kernels.parallel``), or after the other on this thread."""
    if 2.0 * batch * steps * units * 4 * units < SPLIT_FLOPS:
        return 1
    return min(intra_op_threads(), batch // 8 or 1)


def forward(p: np.ndarray, h0: np.ndarray, c0: np.ndarray, r: np.ndarray):
    """(hs [B, T, U], h_T, c_T, cs, tanh(cs), gates [B, T, 4U]) of the sequence."""
    batch, steps, _ = p.shape
    units = r.shape[0]
    dtype = np.result_type(p, h0, c0, r)
    pre, cell, out, _ = _loops(dtype)
    scale = np.full(4 * units, 0.5, dtype)
    scale[2 * units:3 * units] = 1.0  # the cell candidate is a tanh, the others sigmoids
    r = np.asarray(r, dtype)
    p = np.asarray(p, dtype)
    hs, cs, tcs = (np.empty((batch, steps, units), dtype) for _ in range(3))
    gates = np.empty((batch, steps, 4 * units), dtype)
    h = np.array(h0, dtype, copy=True, order="C")
    c = np.array(c0, dtype, copy=True, order="C")
    half = dtype.type(0.5)

    def rows(lo: int, hi: int) -> None:  # the whole recurrence of sequences lo:hi
        z = np.empty((hi - lo, 4 * units), dtype)
        tc = np.empty((hi - lo, units), dtype)
        hb, cb, pb, gb = h[lo:hi], c[lo:hi], p[lo:hi], gates[lo:hi]
        hsb, csb, tcsb = hs[lo:hi], cs[lo:hi], tcs[lo:hi]
        for t in range(steps):
            np.dot(hb, r, out=z)
            pre(z, pb, t, scale)
            np.tanh(z, out=z)
            cell(z, t, half, cb, gb, csb)
            np.tanh(cb, out=tc)
            out(tc, gb, t, hb, hsb, tcsb)

    parallel.split(batch, 0, rows, slices=_batch_slices(batch, steps, units))
    return hs, h, c, cs, tcs, gates


def backward(g_hs, g_h, g_c, h0, c0, r, hs, cs, tcs, gates):
    """(d projected [B, T, 4U], dh0, dc0, dR) from the gradients of hs, h_T and c_T."""
    batch, steps, units = hs.shape
    dtype = hs.dtype
    grad = _loops(dtype)[3]
    g_hs = np.ascontiguousarray(g_hs, dtype)
    r_t = np.ascontiguousarray(np.asarray(r, dtype).T)
    dh = np.array(g_h, dtype, copy=True, order="C")
    dc = np.array(g_c, dtype, copy=True, order="C")
    dzs = np.empty((batch, steps, 4 * units), dtype)
    c0 = np.ascontiguousarray(c0, dtype)
    one = dtype.type(1.0)

    def rows(lo: int, hi: int) -> None:  # back through time for sequences lo:hi
        g_b, gates_b, cs_b, tcs_b = g_hs[lo:hi], gates[lo:hi], cs[lo:hi], tcs[lo:hi]
        dhb, dcb, dzsb = dh[lo:hi], dc[lo:hi], dzs[lo:hi]
        for t in range(steps - 1, -1, -1):
            c_prev = cs_b[:, t - 1] if t > 0 else c0[lo:hi]
            grad(t, one, g_b, gates_b, c_prev, tcs_b, dhb, dcb, dzsb)
            np.dot(dzsb[:, t], r_t, out=dhb)  # a strided view: BLAS reads it in place

    parallel.split(batch, 0, rows, slices=_batch_slices(batch, steps, units))
    h_prev = np.empty_like(hs)
    h_prev[:, 0] = h0
    h_prev[:, 1:] = hs[:, :-1]
    h_rows = h_prev.reshape(-1, units)
    dz_rows = dzs.reshape(-1, 4 * units)
    dr = np.empty((units, 4 * units), dtype)

    def units_block(lo: int, hi: int) -> None:  # dR's rows lo:hi, a contiguous block
        np.dot(h_rows[:, lo:hi].T, dz_rows, out=dr[lo:hi])

    parallel.split(units, h_rows.nbytes + dzs.nbytes, units_block)
    return dzs, dh, dc, dr
