"""``tf.gradients`` (TF1): gradients from a graph's own nodes, without a tape.

The graph already records every op with its inputs, so reverse-mode differentiation walks the
nodes between `xs` and `ys` backwards and applies each op's gradient rule; the rules emit the
backward nodes into the same graph. Gradients with respect to a variable sum over its reads.
"""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import errors, nest
from tapeflow.framework.context import graph_scope
from tapeflow.framework.variable import Variable
from tapeflow.graph.ir import SymbolicTensor


def _differentiable(t) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


@export("gradients")
def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              **kwargs: Any) -> list:
    """d(sum of ys)/d(each x) as symbolic tensors (None where unconnected); graphs only."""
    from tapeflow.ops import array_ops, math_ops

    ys, xs = nest.flatten(ys), nest.flatten(xs)
    graph = next((y.graph for y in ys if isinstance(y, SymbolicTensor)), None)
    if graph is None:
        raise errors.InvalidArgumentError(
            None, "gradients", "tf.gradients needs graph tensors (it is not supported when "
            f"executing eagerly: use tf.GradientTape)\n{errors.user_line()}")
    sources: dict[int, list] = {}
    for i, x in enumerate(xs):
        if isinstance(x, Variable):
            reads = [n.outputs[0] for n in graph.nodes
                     if n.op.variable == "read" and n.attrs["var"] is x]
        else:
            reads = [x]
        for r in reads:
            sources.setdefault(id(r), []).append(i)
    reach = set(sources)
    on_path = []
    for node in graph.nodes:
        if any(id(t) in reach for t in node.inputs) and node.op.grad_fn is not None:
            on_path.append(node)
            reach.update(id(t) for t in node.outputs)
    grads: dict[int, Any] = {}
    with graph_scope(graph):
        seeds = [None] * len(ys) if grad_ys is None else nest.flatten(grad_ys)
        for y, g in zip(ys, seeds):
            g = array_ops.ones_like(y) if g is None else g
            grads[id(y)] = math_ops.add(grads[id(y)], g) if id(y) in grads else g
        for node in reversed(on_path):
            outs = node.outputs
            gs = [grads.get(id(t)) for t in outs]
            if all(g is None for g in gs):
                continue
            if node.op.multi_output:
                g_in = tuple(array_ops.zeros_like(t) if g is None else g
                             for g, t in zip(gs, outs))
                result = node.op.grad_fn(g_in, tuple(outs), *node.inputs, **node.attrs)
            else:
                result = node.op.grad_fn(gs[0], outs[0], *node.inputs, **node.attrs)
            if len(node.inputs) == 1 and not isinstance(result, (tuple, list)):
                result = (result,)
            for t, g in zip(node.inputs, result):
                if g is not None and id(t) in reach and _differentiable(t):
                    grads[id(t)] = math_ops.add(grads[id(t)], g) if id(t) in grads else g
        out: list = [None] * len(xs)
        for key, positions in sources.items():
            g = grads.get(key)
            if g is None:
                continue
            for i in positions:
                out[i] = g if out[i] is None else math_ops.add(out[i], g)
    return out
