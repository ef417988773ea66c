"""Constant folding: pure nodes whose inputs are all constants are computed at compile time."""

from __future__ import annotations

import numpy as np

from tapeflow.graph.ir import CONST, Graph, clone, remove_nodes, replace_uses

MAX_ELEMENTS = 1 << 20  # larger results stay as ops (folding would bloat the graph's memory)
MAX_SHAPE_DERIVED = 1 << 16  # cap for values made from static shapes (zeros_like, broadcasts)

def _known_inputs(node) -> list | None:
    """Input values for compile-time evaluation (dummies for static inputs the op reads for
    their shape only, ``Op.shape_only``: "like" tensors of gradient plumbing)."""
    values = []
    for i, t in enumerate(node.inputs):
        if t.node.op is CONST:
            values.append(t.node.attrs["value"])
        elif (i in node.op.shape_only and t.shape.is_fully_defined()
              and t.dtype.name != "string"):
            values.append(np.broadcast_to(np.zeros((), t.dtype.as_numpy_dtype),
                                          t.shape.as_tuple()))
        else:
            return None
    return values


def run(graph: Graph) -> tuple[Graph, str]:
    """Evaluate pure nodes whose inputs are known at compile time; replace them by Consts."""
    g, _ = clone(graph)
    result = []
    dead: set[int] = set()
    for node in list(g.nodes):
        result.append(node)
        if (node.op is CONST or not node.op.foldable or node.op.stateful or not node.inputs
                or node.control_inputs):
            continue
        values = _known_inputs(node)
        if values is None:
            continue
        try:
            with np.errstate(all="ignore"):
                out = node.op.kernel(*values, **node.attrs)
        except Exception:  # leave it for run time, where the error names the user's line
            continue
        outs = list(out) if node.op.multi_output else [out]
        shape_derived = any(t.node.op is not CONST for t in node.inputs)
        limit = MAX_SHAPE_DERIVED if shape_derived else MAX_ELEMENTS
        if sum(np.size(o) for o in outs) > limit:
            continue
        for t, value in zip(node.outputs, outs):
            value = np.asarray(value)
            if t.dtype.name != "string" and value.dtype != t.dtype.as_numpy_dtype:
                value = value.astype(t.dtype.as_numpy_dtype)
            const = g.add_node(CONST, [], {"value": value}, [(value.shape, t.dtype)],
                               location=node.location)
            g.nodes.pop()
            result.append(const)
            replace_uses(g, t, const.outputs[0])
        dead.add(id(node))
    g.nodes = result
    remove_nodes(g, dead)
    return g, f"fold: folded {len(dead)} nodes into constants"
