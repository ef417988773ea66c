"""``tf.gradients`` (TF1): gradients from a graph's own nodes, without a tape.

The graph already records every op with its inputs, so its nodes are the steps that the
reverse-mode walker ``framework/backprop.py`` (the one GradientTape uses) walks backwards between
`xs` and `ys`; the gradient rules emit the backward nodes into the same graph. Gradients with
respect to a variable sum over its reads.
"""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import backprop, errors, nest
from tapeflow.framework.context import graph_scope
from tapeflow.framework.variable import Variable
from tapeflow.graph.ir import SymbolicTensor


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
    steps = [backprop.Step(node.op.grad_fn, node.attrs, [id(t) for t in node.inputs],
                           node.inputs, tuple(node.outputs) if node.op.multi_output
                           else node.outputs[0], [id(t) for t in node.outputs],
                           node.op.multi_output)
             for node in graph.nodes if node.op.grad_fn is not None]
    steps = backprop.relevant(steps, set(sources))
    reach = set(sources).union(*(s.out_keys for s in steps))
    grads: dict[int, Any] = {}
    with graph_scope(graph):
        seeds = [None] * len(ys) if grad_ys is None else nest.flatten(grad_ys)
        for y, g in zip(ys, seeds):
            backprop.accumulate(grads, id(y), array_ops.ones_like(y) if g is None else g)
        backprop.backward(steps, grads, set(sources), reach)
        out: list = [None] * len(xs)
        for key, positions in sources.items():
            g = grads.get(key)
            if g is None:
                continue
            for i in positions:
                out[i] = g if out[i] is None else math_ops.add(out[i], g)
    return out
