"""tapeflow graphs as TensorFlow ``GraphDef`` protos (the tensorboard package's protos).

Node names keep their name scopes (``sequential/dense/MatMul``), which the Graphs dashboard
draws as collapsible groups; op types are tapeflow's op names, which are TensorFlow's
(``Const``, ``AddV2``, ``MatMul``, ``Conv2D`` ...). Attributes follow TensorFlow's conventions:
``T`` (the input dtype) on computing ops, ``value``/``dtype`` on ``Const``, ``dtype``/``shape``
on ``Placeholder``, the op's own attributes as ints, floats, bools, strings, lists, types and
shapes, and ``_output_shapes`` so edges show tensor shapes. Each variable a graph reads or
updates appears once as a ``VarHandleOp`` named after it (``dense/kernel``), feeding the nodes
that use it. A TF1 graph (``tf.compat.v1``) shows ``tf.add`` as a node named ``Add``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.summary import _tb

_DT = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF",
       "bfloat16": "DT_BFLOAT16", "int32": "DT_INT32", "int64": "DT_INT64", "int16": "DT_INT16",
       "int8": "DT_INT8", "uint8": "DT_UINT8", "uint16": "DT_UINT16", "uint32": "DT_UINT32",
       "uint64": "DT_UINT64", "bool": "DT_BOOL", "string": "DT_STRING",
       "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128"}
# attributes that hold run-time objects rather than op parameters
_SKIP = frozenset({"name"})
# tapeflow op names that TF1's graphs call by their old name (the node name tf.add gets)
_TF1_NODE_NAMES = {"AddV2": "Add"}


def data_type(dtype: Any) -> int:
    types_pb2 = _tb.proto("types_pb2")
    name = getattr(dtype, "name", str(dtype))
    return types_pb2.DataType.Value(_DT.get(name, "DT_INVALID"))


def shape_proto(dims: Any) -> Any:
    tensor_shape_pb2 = _tb.proto("tensor_shape_pb2")
    if dims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(dim=[
        tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in dims])


def tensor_proto(value: np.ndarray) -> Any:
    tensor_util = _tb.module("util.tensor_util")
    value = np.asarray(value)
    if value.dtype == object:
        value = value.astype(bytes)
    return tensor_util.make_tensor_proto(value)


def _attr(value: Any) -> Any | None:
    """An AttrValue for one tapeflow attribute, or None when it has no GraphDef form."""
    attr_value_pb2 = _tb.proto("attr_value_pb2")
    from tapeflow.framework.dtypes import DType

    A = attr_value_pb2.AttrValue
    if isinstance(value, bool):
        return A(b=value)
    if isinstance(value, (int, np.integer)):
        return A(i=int(value))
    if isinstance(value, (float, np.floating)):
        return A(f=float(value))
    if isinstance(value, str):
        return A(s=value.encode())
    if isinstance(value, DType):
        return A(type=data_type(value))
    if isinstance(value, np.ndarray) and value.size <= 64:
        return A(tensor=tensor_proto(value))
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            return A(list=A.ListValue(i=[int(v) for v in value]))
        if all(isinstance(v, (int, float, np.number)) for v in value):
            return A(list=A.ListValue(f=[float(v) for v in value]))
        if all(v is None or isinstance(v, int) for v in value):
            return A(shape=shape_proto(value))
        if all(isinstance(v, str) for v in value):
            return A(list=A.ListValue(s=[v.encode() for v in value]))
    return None


def _variable_name(var: Any) -> str:
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


def to_graph_def(graph: Any, tf1_names: bool = False) -> Any:
    """The GraphDef of `graph` (see the module docstring for the conventions)."""
    from tapeflow.framework.variable import Variable

    graph_pb2 = _tb.proto("graph_pb2")
    node_def_pb2 = _tb.proto("node_def_pb2")
    versions_pb2 = _tb.proto("versions_pb2")
    out = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=1))
    names = node_names(graph, tf1_names)
    used = set(names.values())
    handles: dict[int, str] = {}

    def handle(var: Any) -> str:
        if id(var) not in handles:
            base, name, k = _variable_name(var), _variable_name(var), 0
            while name in used:
                k += 1
                name = f"{base}_{k}"
            used.add(name)
            handles[id(var)] = name
            node = node_def_pb2.NodeDef(name=name, op="VarHandleOp")
            node.attr["dtype"].type = data_type(var.dtype)
            node.attr["shape"].shape.CopyFrom(shape_proto(var.shape.as_tuple()))
            node.attr["shared_name"].s = name.encode()
            out.node.append(node)
        return handles[id(var)]

    for n in graph.nodes:
        node = node_def_pb2.NodeDef(name=names[id(n)], op=n.op.name,
                                    device="/job:localhost/replica:0/task:0/device:CPU:0")
        for t in n.inputs:
            src = names.get(id(t.node))
            if src is not None:
                node.input.append(src if t.index == 0 else f"{src}:{t.index}")
        for key, value in n.attrs.items():
            if isinstance(value, Variable):
                node.input.append(handle(value))
            elif key == "shape" and n.op.name == "Placeholder":
                node.attr["shape"].shape.CopyFrom(shape_proto(value))
            elif key not in _SKIP:
                attr = _attr(value)
                if attr is not None:
                    node.attr[key].CopyFrom(attr)
        node.input.extend(f"^{names[id(c)]}" for c in n.control_inputs if id(c) in names)
        if n.op.name == "Const":
            node.attr["dtype"].type = data_type(n.outputs[0].dtype)
        elif n.inputs and "T" not in node.attr:
            node.attr["T"].type = data_type(n.inputs[0].dtype)
        shapes = node.attr["_output_shapes"].list.shape
        shapes.extend(shape_proto(t.shape.as_tuple()) for t in n.outputs)
        out.node.append(node)
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
