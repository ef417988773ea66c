"""tapeflow graphs as TensorFlow ``GraphDef`` protos (the tensorboard package's protos).

Node names keep their name scopes (``sequential/dense/MatMul``), which the Graphs dashboard
draws as collapsible groups; op types and attributes are TensorFlow's (``tf_ops``: ``Const``,
``AddV2``, ``MatMul``, ``Conv2D``; ``T``, ``value``/``dtype`` on ``Const``, ``dtype``/``shape``
on ``Placeholder``), with ``_output_shapes`` so edges show tensor shapes; cond branches and
loop bodies are functions in the GraphDef's library. Each variable a graph reads or
updates appears once as a ``VarHandleOp`` named after it (``dense/kernel``), feeding the nodes
that use it. A TF1 graph (``tf.compat.v1``) shows ``tf.add`` as a node named ``Add``.
"""

from __future__ import annotations

from typing import Any

from tapeflow.summary import _tb, tf_ops
from tapeflow.summary.function_def import Library, node_attrs
from tapeflow.summary.tf_ops import DEVICE, data_type, shape_proto

# tapeflow op names that TF1's graphs call by their old name (the node name tf.add gets)
_TF1_NODE_NAMES = {"AddV2": "Add"}


def variable_name(var: Any) -> str:
    """The name of a variable's handle node (``dense/kernel``)."""
    name = getattr(var, "name", "Variable") or "Variable"
    return name[:-2] if name.endswith(":0") else name


def as_graph_def(graph_data: Any, tf1_names: bool | None = None) -> Any:
    """A GraphDef for a Graph, a ConcreteFunction, a tf.function (its first trace) or a
    GraphDef (returned as it is)."""
    graph_pb2 = _tb.proto("graph_pb2")
    if isinstance(graph_data, graph_pb2.GraphDef):
        return graph_data
    graph = _graph_of(graph_data)
    if tf1_names is None:
        tf1_names = not getattr(graph, "building_function", False) and type(graph).__name__ \
            == "Graph"
    return to_graph_def(graph, tf1_names)


def _graph_of(graph_data: Any) -> Any:
    from tapeflow.graph.ir import Graph

    if isinstance(graph_data, Graph):
        return graph_data
    if hasattr(graph_data, "graph") and isinstance(graph_data.graph, Graph):  # concrete fn
        return graph_data.graph
    concretes = getattr(graph_data, "_concretes", None)
    if concretes:
        return concretes[0].graph
    raise TypeError(f"tf.summary.graph: expected a tf.Graph, a concrete function or a "
                    f"GraphDef, got {type(graph_data).__name__}")


def to_graph_def(graph: Any, tf1_names: bool = False, add_shapes: bool = True,
                 max_tensor: int | None = 64) -> Any:
    """The GraphDef of `graph` (see the module docstring for the conventions); constants of
    more than `max_tensor` elements are left out of it (TensorBoard needs no weights)."""
    from tapeflow.framework.variable import Variable

    graph_pb2 = _tb.proto("graph_pb2")
    node_def_pb2 = _tb.proto("node_def_pb2")
    versions_pb2 = _tb.proto("versions_pb2")
    out = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=1))
    names = node_names(graph, tf1_names)
    used = set(names.values())
    handles: dict[int, str] = {}
    library = Library()

    def handle(var: Any) -> str:
        if id(var) not in handles:
            base, name, k = variable_name(var), variable_name(var), 0
            while name in used:
                k += 1
                name = f"{base}_{k}"
            used.add(name)
            handles[id(var)] = name
            node = node_def_pb2.NodeDef(name=name, op="VarHandleOp", device=DEVICE)
            node.attr["dtype"].type = data_type(var.dtype)
            node.attr["shape"].shape.CopyFrom(shape_proto(var.shape.as_tuple()))
            node.attr["shared_name"].s = name.encode()
            out.node.append(node)
        return handles[id(var)]

    for n in graph.nodes:
        op_type = tf_ops.tf_type(n)
        node = node_def_pb2.NodeDef(name=names[id(n)], op=op_type, device=DEVICE)
        var = n.attrs.get("var")
        if isinstance(var, Variable):
            node.input.append(handle(var))
        for t in n.inputs:
            src = names.get(id(t.node))
            if src is not None:
                node.input.append(src if t.index == 0 else f"{src}:{t.index}")
        node.input.extend(f"^{names[id(c)]}" for c in n.control_inputs if id(c) in names)
        for key, value in node_attrs(n, op_type, library, max_tensor).items():
            node.attr[key].CopyFrom(value)
        if add_shapes:
            shapes = node.attr["_output_shapes"].list.shape
            shapes.extend(shape_proto(t.shape.as_tuple()) for t in n.outputs)
        out.node.append(node)
    out.library.function.extend(library.functions)
    return out


def node_names(graph: Any, tf1_names: bool = False) -> dict[int, str]:
    """GraphDef node name of every node (by id), unique; TF1's names for TF1 graphs."""
    names: dict[int, str] = {}
    taken = {n.name for n in graph.nodes}
    for n in graph.nodes:
        name = n.name
        if tf1_names:
            scope, _, leaf = name.rpartition("/")
            op, _, suffix = leaf.partition("_")
            if op in _TF1_NODE_NAMES:
                renamed = _TF1_NODE_NAMES[op] + (f"_{suffix}" if suffix else "")
                candidate = f"{scope}/{renamed}" if scope else renamed
                if candidate not in taken:
                    taken.add(candidate)
                    name = candidate
        names[id(n)] = name
    return names
