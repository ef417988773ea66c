"""Common-subexpression elimination: identical pure nodes on identical inputs computed once."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.graph.ir import CONST, Graph, clone, remove_nodes, replace_uses


def _attr_key(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes()) if value.size <= 64 \
            else ("big", id(value))
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _attr_key(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return (type(value).__name__, value)


def run(graph: Graph) -> tuple[Graph, str]:
    """Merge nodes with the same op, inputs and attributes (stateful nodes never merge)."""
    g, _ = clone(graph)
    seen: dict[Any, Any] = {}
    dead: set[int] = set()
    for i, node in enumerate(g.nodes):
        if node.op.stateful or node.control_inputs or (
                node.op is not CONST and not node.inputs and not node.attrs):
            continue
        key = (node.op.name, tuple(id(t) for t in node.inputs),
               tuple(sorted((k, _attr_key(v)) for k, v in node.attrs.items())))
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        for a, b in zip(node.outputs, first.outputs):
            replace_uses(g, a, b, after=i)
        dead.add(id(node))
    remove_nodes(g, dead)
    return g, f"cse: merged {len(dead)} duplicate nodes"
