"""Dead-code elimination: drop nodes no output depends on.

Stateful nodes (assign, print, random) stay, in program order, except unused variable reads:
reading has no effect of its own.
"""

from __future__ import annotations

from tapeflow.graph.ir import PLACEHOLDER, Graph, SymbolicTensor, clone, remove_nodes


def has_effect(node) -> bool:
    """True for nodes that must run even when nothing uses their outputs."""
    return node.op.stateful and node.op is not PLACEHOLDER and node.op.variable != "read"


def run(graph: Graph, keep_stateful: bool = True) -> tuple[Graph, str]:
    """Keep ancestors of the outputs (and of stateful nodes unless `keep_stateful` is False)."""
    g, _ = clone(graph)
    live: set[int] = set()
    stack = [t.node for t in g.outputs if isinstance(t, SymbolicTensor)]
    if keep_stateful:
        stack += [n for n in g.nodes if has_effect(n)]
    while stack:
        node = stack.pop()
        if id(node) not in live:
            live.add(id(node))
            stack.extend(t.node for t in node.inputs)
            stack.extend(node.control_inputs)
    dead = {id(n) for n in g.nodes if id(n) not in live and n.op is not PLACEHOLDER}
    names = sorted({n.op.name for n in g.nodes if id(n) in dead})
    remove_nodes(g, dead)
    report = f"dce: removed {len(dead)} nodes" + (f" ({', '.join(names)})" if dead else "")
    return g, report
