"""A whole LSTM sequence as one op (the kernel: ``kernels/lstm.py``), what ``keras.layers.LSTM``
runs with its default activations.

``_LSTMSequence(projected, h0, c0, recurrent_kernel, bias)`` -> (hs, h_T, c_T, cs, tanh(cs),
gates), time-major: projected [T, B, 4U] is x @ kernel for every step (the op adds the bias
[4U] in its step pass), hs, cs, tanh(cs) [T, B, U], gates [T, B, 4U]; Keras's gate order
(i, f, c, o). The last three outputs are what the backward pass reads. ``_LSTMSequenceGrad`` is its
gradient; like FusedBatchNormGrad it has none itself (no second derivative through the fused
sequence: unroll the cell by hand for that).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.kernels import lstm as _lstm


def _sequence_rule(projected, h0, c0, r, bias):
    (ps, dtype), (hs0, _), _, (rs, _) = projected, h0, c0, r
    batch = ps[1] if ps is not None else (hs0[0] if hs0 is not None else None)
    steps = ps[0] if ps is not None else None
    units = rs[0] if rs is not None else None
    if rs is not None and (len(rs) != 2 or rs[1] is not None and units is not None
                           and rs[1] != 4 * units):
        raise errors.InvalidArgumentError(
            None, "_LSTMSequence", f"_LSTMSequence: the recurrent kernel must be [units, "
            f"4 * units], got {list(rs)}\n{errors.user_line()}")
    seq, state = (steps, batch, units), (batch, units)
    return [(seq, dtype), (state, dtype), (state, dtype), (seq, dtype), (seq, dtype),
            ((steps, batch, None if units is None else 4 * units), dtype)]


def _sequence_flops(node) -> float:
    p = node.inputs[0].shape.as_tuple()
    r = node.inputs[3].shape.as_tuple()
    if p is None or r is None or None in p or None in r:
        return 0.0
    return 2.0 * p[0] * p[1] * r[0] * r[1]


def _dims(node) -> tuple | None:
    """(B, T, U, itemsize) at the node's static shapes, from the gates output [T, B, 4U]."""
    gates = node.outputs[5] if len(node.outputs) == 6 else node.outputs[0]
    shape = gates.shape.as_tuple()
    if shape is None or None in shape:
        return None
    return shape[1], shape[0], shape[2] // 4, gates.dtype.size


def _grad_workspace(node) -> int:
    """Every step's previous h [T, B, U] (for dR) and R transposed."""
    dims = _dims(node)
    if dims is None:
        return 0
    b, t, u, size = dims
    return (b * t * u + 4 * u * u) * size


@op("_LSTMSequence", multi_output=True, same_dtype=True, shape=_sequence_rule, worker=True,
    flops=_sequence_flops)
def _lstm_sequence(projected, h0, c0, recurrent_kernel, bias):
    """LSTM over all T steps of `projected`: (hs, h_T, c_T, cs, tanh(cs), gates)."""
    _, b, width = projected.shape
    units = recurrent_kernel.shape[0]
    if recurrent_kernel.shape != (units, 4 * units) or width != 4 * units \
            or h0.shape != (b, units) or c0.shape != (b, units) or bias.shape != (4 * units,):
        raise ValueError(f"_LSTMSequence: projected {list(projected.shape)} must be [T, B, "
                         f"4 * units], h0 {list(h0.shape)} and c0 {list(c0.shape)} [B, units], "
                         f"the recurrent kernel {list(recurrent_kernel.shape)} [units, "
                         f"4 * units], the bias {list(bias.shape)} [4 * units]")
    return _lstm.forward(projected, h0, c0, recurrent_kernel, bias)


def _grad_rule(g_hs, g_h, g_c, h0, c0, r, hs, cs, tcs, gates):
    (gs, dtype), (rs, _) = gates, r
    width = gs[2] if gs is not None else (4 * rs[0] if rs is not None and rs[0] else None)
    return [gates, h0, c0, r, ((width,), dtype)]


def _grad_flops(node) -> float:
    g = node.inputs[9].shape.as_tuple()  # gates [T, B, 4U]
    if g is None or None in g:
        return 0.0
    return 2.0 * 2.0 * g[0] * g[1] * g[2] * (g[2] // 4)  # dz @ R^T per step, then dR


@op("_LSTMSequenceGrad", multi_output=True, same_dtype=True, shape=_grad_rule, worker=True,
    flops=_grad_flops, workspace=_grad_workspace)
def _lstm_sequence_grad(g_hs, g_h, g_c, h0, c0, recurrent_kernel, hs, cs, tcs, gates):
    """(d projected, dh0, dc0, d recurrent_kernel, d bias) of ``_LSTMSequence``; `g_hs` is
    [T, B, U], or a scalar 0 when hs has no gradient."""
    return _lstm.backward(g_hs, g_h, g_c, h0, c0, recurrent_kernel, hs, cs, tcs, gates)


@_lstm_sequence.def_grad
def _lstm_sequence_vjp(gs, outs, projected, h0, c0, recurrent_kernel, bias):
    """The saved outputs (cs, tanh(cs), gates) never get a gradient; a sequence read only at
    its last step (``return_sequences=False``) has none for hs either: a scalar 0 stands for it
    (the walker's zeros for all four cost W10's eager step ~11 MB of memset)."""
    from tapeflow.ops import array_ops

    g_hs, g_h, g_c = gs[:3]
    hs, h, c, cs, tcs, gates = outs
    if g_hs is None:
        g_hs = convert_to_tensor(np.zeros((), hs.dtype.as_numpy_dtype))
    g_h = array_ops.zeros_like(h) if g_h is None else g_h
    g_c = array_ops.zeros_like(c) if g_c is None else g_c
    return apply(_lstm_sequence_grad, g_hs, g_h, g_c, h0, c0, recurrent_kernel, hs, cs, tcs,
                 gates)


_lstm_sequence_vjp.takes_none = True


def lstm_sequence(projected: Any, h0: Any, c0: Any, recurrent_kernel: Any, bias: Any) -> tuple:
    """(hs [T, B, U], h_T, c_T) of an LSTM with sigmoid gates and tanh activations over
    time-major `projected` [T, B, 4U] (x @ kernel) plus `bias` [4U]."""
    hs, h, c, *_ = apply(_lstm_sequence, projected, h0, c0, recurrent_kernel, bias)
    return hs, h, c
