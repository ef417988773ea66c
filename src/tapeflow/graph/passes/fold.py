"""Constant folding: pure nodes whose inputs are all constants are computed at compile time."""

from __future__ import annotations

import numpy as np

from tapeflow.graph.ir import CONST, Graph, clone, remove_nodes, replace_uses

MAX_ELEMENTS = 1 << 20  # larger results stay as ops (folding would bloat the graph's memory)


def run(graph: Graph) -> tuple[Graph, str]:
    """Evaluate pure all-constant nodes with their kernels; replace them by Const nodes."""
    g, _ = clone(graph)
    result = []
    dead: set[int] = set()
    for node in list(g.nodes):
        result.append(node)
        if (node.op is CONST or node.op.stateful or not node.inputs or node.control_inputs
                or any(t.node.op is not CONST for t in node.inputs)):
            continue
        try:
            with np.errstate(all="ignore"):
                out = node.op.kernel(*[t.node.attrs["value"] for t in node.inputs], **node.attrs)
        except Exception:  # leave it for run time, where the error names the user's line
            continue
        outs = list(out) if node.op.multi_output else [out]
        if sum(np.size(o) for o in outs) > MAX_ELEMENTS:
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
