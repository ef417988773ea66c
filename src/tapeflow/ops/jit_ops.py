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


def replay_values(replay: tuple, inputs: tuple) -> list:
    """The inputs, then each of the cluster's original ops applied: (op, attrs, refs) per step,
    refs as in ``jit_cluster.Program``."""
    values = list(inputs)
    for o, attrs, refs in replay:
        values.append(apply(o, *[values[r] for r in refs], **dict(attrs)))
    return values


def replay_ops(replay: tuple, inputs: tuple):
    """The value of the cluster's last op applied to `inputs`."""
    return replay_values(replay, inputs)[-1]


@_jit_cluster.def_grad
def _(g, out, *inputs, program, _replay):
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(list(inputs))
        y = replay_ops(_replay, inputs)
    return tape.gradient(y, list(inputs), output_gradients=g)


def _rule_n(*specs, program, _replay):
    spec = (program.shape, _dtypes.as_dtype(program.dtype))
    return [spec] * (1 + len(program.extra))


@op("JitClusterN", shape=_rule_n, output="fresh", multi_output=True)
def _jit_cluster_n(*arrays, program, _replay):
    """A cluster with further outputs (``Program.extra``): the last value, then those."""
    return jit_cluster.run(program, *arrays)


@_jit_cluster_n.def_grad
def _(gs, outs, *inputs, program, _replay):
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(list(inputs))
        values = replay_values(_replay, inputs)
    ys = [values[-1]] + [values[r] for r in program.extra]
    pairs = [(y, g) for y, g in zip(ys, gs) if g is not None]
    return tape.gradient([y for y, _ in pairs], list(inputs),
                         output_gradients=[g for _, g in pairs])
