"""``JitCluster``: a cluster of elementwise ops (ending in a reduction or not) run as one
compiled loop (``jit_compile=True``).

The pass ``graph/passes/jit_cluster.py`` replaces a tree of elementwise nodes with one node of
this op. Its kernel runs the cluster's ``Program`` (``kernels/jit_cluster.py``); its gradient
replays the original ops under a tape, so a compiled function stays differentiable (also to
higher orders, as the replayed ops are recorded like any others).
"""

from __future__ import annotations

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tape import GradientTape
from tapeflow.kernels import jit_cluster


def _rule(*specs, program, _replay):
    return program.result_shape, _dtypes.as_dtype(program.dtype)


@op("JitCluster", shape=_rule, output="fresh")
def _jit_cluster(*arrays, program, _replay):
    return jit_cluster.run(program, *arrays)


def replay_ops(replay: tuple, inputs: tuple):
    """The cluster's original ops applied to `inputs`: (op, attrs, refs) per step, refs as in
    ``jit_cluster.Program``."""
    values = list(inputs)
    for o, attrs, refs in replay:
        values.append(apply(o, *[values[r] for r in refs], **dict(attrs)))
    return values[-1]


@_jit_cluster.def_grad
def _(g, out, *inputs, program, _replay):
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(list(inputs))
        y = replay_ops(_replay, inputs)
    return tape.gradient(y, list(inputs), output_gradients=g)
