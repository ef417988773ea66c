"""Graph invariants, checked after every optimizer pass in tests (like JAX's jaxpr checker)."""

from __future__ import annotations

from tapeflow.framework import errors
from tapeflow.graph.ir import PLACEHOLDER, Graph, subgraphs


def verify(graph: Graph) -> Graph:
    """Raise InternalError if `graph` breaks an invariant; return it unchanged otherwise.

    Checks: every input is defined earlier in this graph, outputs belong to their node, graph
    inputs are placeholders of this graph, outputs are defined, shapes agree with shape rules.
    """
    defined: set[int] = set()
    for t in graph.inputs:
        if t.graph is not graph or t.node.op is not PLACEHOLDER:
            _fail(graph, f"input {t.name} is not a placeholder of this graph")
    seen_nodes: set[int] = set()
    for node in graph.nodes:
        if id(node) in seen_nodes:
            _fail(graph, f"node {node.name} appears twice")
        seen_nodes.add(id(node))
        if node.graph is not graph:
            _fail(graph, f"node {node.name} belongs to graph {node.graph.name}")
        for c in node.control_inputs:
            if id(c) not in seen_nodes or c is node:
                _fail(graph, f"node {node.name} has control input {c.name} not defined before it")
        for i, t in enumerate(node.inputs):
            if id(t) not in defined:
                _fail(graph, f"node {node.name} uses {t.name} (input {i}) before it is defined")
        for i, t in enumerate(node.outputs):
            if t.node is not node or t.index != i or t.graph is not graph:
                _fail(graph, f"output {i} of {node.name} is not linked to its node")
            defined.add(id(t))
        if node.op.shape_fn is not None and not node.op.stateful:
            specs = [(t.shape.as_tuple(), t.dtype) for t in node.inputs]
            out = node.op.shape_fn(*specs, **node.attrs)
            out = list(out) if node.op.multi_output else [out]
            for t, (shape, dtype) in zip(node.outputs, out):
                if dtype is not t.dtype or not t.shape.is_compatible_with(shape):
                    _fail(graph, f"{node.name}: output {t.name} is {t.dtype.name}{t.shape} but "
                                 f"the shape rule says {dtype.name}{shape}")
        for sub in subgraphs(node):
            verify(sub)
    for t in graph.outputs:
        if hasattr(t, "node") and id(t) not in defined:
            _fail(graph, f"graph output {t.name} is not defined in the graph")
    return graph


def _fail(graph: Graph, msg: str) -> None:
    raise errors.InternalError(None, "verify", f"graph {graph.name}: {msg}")
