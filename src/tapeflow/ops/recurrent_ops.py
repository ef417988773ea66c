"""A whole LSTM sequence as one op (the kernel: ``kernels/lstm.py``), what ``keras.layers.LSTM``
runs with its default activations.

``_LSTMSequence(projected, h0, c0, recurrent_kernel)`` -> (hs, h_T, c_T, cs, tanh(cs), gates):
projected [B, T, 4U] is x @ kernel + bias for every step, Keras's gate order (i, f, c, o).
The last three outputs are what the backward pass reads. ``_LSTMSequenceGrad`` is its
gradient; like FusedBatchNormGrad it has none itself (no second derivative through the fused
sequence: unroll the cell by hand for that).
"""

from __future__ import annotations

from typing import Any

from tapeflow.framework import errors
from tapeflow.framework.dispatch import apply, op
from tapeflow.kernels import lstm as _lstm


def _sequence_rule(projected, h0, c0, r):
    (ps, dtype), (hs0, _), _, (rs, _) = projected, h0, c0, r
    batch = ps[0] if ps is not None else (hs0[0] if hs0 is not None else None)
    steps = ps[1] if ps is not None else None
    units = rs[0] if rs is not None else None
    if rs is not None and (len(rs) != 2 or rs[1] is not None and units is not None
                           and rs[1] != 4 * units):
        raise errors.InvalidArgumentError(
            None, "_LSTMSequence", f"_LSTMSequence: the recurrent kernel must be [units, "
            f"4 * units], got {list(rs)}\n{errors.user_line()}")
    seq, state = (batch, steps, units), (batch, units)
    return [(seq, dtype), (state, dtype), (state, dtype), (seq, dtype), (seq, dtype),
            ((batch, steps, None if units is None else 4 * units), dtype)]


def _sequence_flops(node) -> float:
    p = node.inputs[0].shape.as_tuple()
    r = node.inputs[3].shape.as_tuple()
    if p is None or r is None or None in p or None in r:
        return 0.0
    return 2.0 * p[0] * p[1] * r[0] * r[1]


def _dims(node) -> tuple | None:
    """(B, T, U, itemsize) at the node's static shapes, from the gates output [B, T, 4U]."""
    gates = node.outputs[5] if len(node.outputs) == 6 else node.outputs[0]
    shape = gates.shape.as_tuple()
    if shape is None or None in shape:
        return None
    return shape[0], shape[1], shape[2] // 4, gates.dtype.size


def _sequence_workspace(node) -> int:
    """The running h, c, tanh(c) and the step's [B, 4U] product."""
    dims = _dims(node)
    return 0 if dims is None else (3 * dims[0] * dims[2] + 4 * dims[0] * dims[2]) * dims[3]


def _grad_workspace(node) -> int:
    """Every step's previous h [B, T, U] (for dR) and R transposed."""
    dims = _dims(node)
    if dims is None:
        return 0
    b, t, u, size = dims
    return (b * t * u + 4 * u * u) * size


@op("_LSTMSequence", multi_output=True, same_dtype=True, shape=_sequence_rule, worker=True,
    flops=_sequence_flops, workspace=_sequence_workspace)
def _lstm_sequence(projected, h0, c0, recurrent_kernel):
    """LSTM over all T steps of `projected`: (hs, h_T, c_T, cs, tanh(cs), gates)."""
    b, _, width = projected.shape
    units = recurrent_kernel.shape[0]
    if recurrent_kernel.shape != (units, 4 * units) or width != 4 * units \
            or h0.shape != (b, units) or c0.shape != (b, units):
        raise ValueError(f"_LSTMSequence: projected {list(projected.shape)} must be [B, T, "
                         f"4 * units], h0 {list(h0.shape)} and c0 {list(c0.shape)} [B, units], "
                         f"the recurrent kernel {list(recurrent_kernel.shape)} [units, "
                         f"4 * units]")
    return _lstm.forward(projected, h0, c0, recurrent_kernel)


def _grad_rule(g_hs, g_h, g_c, h0, c0, r, hs, cs, tcs, gates):
    return [gates, h0, c0, r]


def _grad_flops(node) -> float:
    g = node.inputs[9].shape.as_tuple()  # gates [B, T, 4U]
    if g is None or None in g:
        return 0.0
    return 2.0 * 2.0 * g[0] * g[1] * g[2] * (g[2] // 4)  # dz @ R^T per step, then dR


@op("_LSTMSequenceGrad", multi_output=True, same_dtype=True, shape=_grad_rule, worker=True,
    flops=_grad_flops, workspace=_grad_workspace)
def _lstm_sequence_grad(g_hs, g_h, g_c, h0, c0, recurrent_kernel, hs, cs, tcs, gates):
    """(d projected, dh0, dc0, d recurrent_kernel) of ``_LSTMSequence``."""
    return _lstm.backward(g_hs, g_h, g_c, h0, c0, recurrent_kernel, hs, cs, tcs, gates)


@_lstm_sequence.def_grad
def _(gs, outs, projected, h0, c0, recurrent_kernel):
    g_hs, g_h, g_c = gs[:3]
    hs, _, _, cs, tcs, gates = outs
    return apply(_lstm_sequence_grad, g_hs, g_h, g_c, h0, c0, recurrent_kernel, hs, cs, tcs,
                 gates)


def lstm_sequence(projected: Any, h0: Any, c0: Any, recurrent_kernel: Any) -> tuple:
    """(hs [B, T, U], h_T, c_T) of an LSTM with sigmoid gates and tanh activations."""
    hs, h, c, *_ = apply(_lstm_sequence, projected, h0, c0, recurrent_kernel)
    return hs, h, c
