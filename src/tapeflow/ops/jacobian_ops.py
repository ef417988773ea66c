"""GradientTape's jacobian and batch_jacobian: built from ops (a gradient per target element,
stacked and reshaped), so the op library installs them on the framework's tape class."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.nest import flatten, pack_sequence_as
from tapeflow.framework.tape import GradientTape, UnconnectedGradients, _call_site, _used_twice
from tapeflow.ops import array_ops, gather_ops, indexed_slices


def _jacobian(self: GradientTape, target: Any, sources: Any, unconnected_gradients: Any =
             UnconnectedGradients.NONE, parallel_iterations: Any = None,
             experimental_use_pfor: bool = True):
    """Full Jacobian d target[i...] / d source[j...], shaped target.shape + source.shape."""
    if self._used and not self._persistent:
        raise RuntimeError(_used_twice(self._first_use))
    target_shape = [int(d) for d in target.shape]
    n = int(np.prod(target_shape)) if target_shape else 1
    flat_sources = flatten(sources)
    rows: list[list] = [[] for _ in flat_sources]
    for i in range(n):
        onehot = np.zeros(n, dtype=target.dtype.as_numpy_dtype)
        onehot[i] = 1
        seed = array_ops.reshape(onehot, target_shape)
        gs = self._gradient(target, flat_sources, seed, unconnected_gradients)
        for j, g in enumerate(gs):
            rows[j].append(g)
    out = []
    for s, gl in zip(flat_sources, rows):
        if all(g is None for g in gl):
            out.append(None)
            continue
        gl = [array_ops.zeros(s.shape, s.dtype) if g is None else indexed_slices.dense(g)
              for g in gl]
        stacked = array_ops.stack(gl)
        out.append(array_ops.reshape(stacked, target_shape + [int(d) for d in s.shape]))
    if not self._persistent:
        self._used = True
        self._first_use = _call_site()
        self._entries = []
    return pack_sequence_as(sources, out)

def _batch_jacobian(self: GradientTape, target: Any, source: Any, unconnected_gradients: Any =
                   UnconnectedGradients.NONE, parallel_iterations: Any = None,
                   experimental_use_pfor: bool = True):
    """Per-example Jacobian: [b, *target_rest, *source_rest] for batch-independent maps."""
    jac = self.jacobian(target, source, unconnected_gradients)
    if jac is None:
        return None
    t_shape = [int(d) for d in target.shape]
    s_shape = [int(d) for d in source.shape]
    b = t_shape[0]
    if s_shape[0] != b:
        raise ValueError(f"batch_jacobian: target batch {b} != source batch {s_shape[0]}")
    t_rest, s_rest = t_shape[1:], s_shape[1:]
    tn, sn = int(np.prod(t_rest)), int(np.prod(s_rest))
    j = array_ops.reshape(jac, [b, tn, b, sn])
    j = array_ops.transpose(j, [0, 2, 1, 3])
    j = array_ops.reshape(j, [b * b, tn, sn])
    idx = [i * b + i for i in range(b)]
    diag = gather_ops.gather(j, idx)
    return array_ops.reshape(diag, [b] + t_rest + s_rest)


GradientTape.jacobian = _jacobian
GradientTape.batch_jacobian = _batch_jacobian
