"""Graph introspection with TensorFlow's names, installed on the graph classes from here.

``graph.as_graph_def()``, ``Operation.type`` / ``node_def`` / ``get_attr`` / ``values()``,
``ConcreteFunction.function_def``: what tools and tutorials read from a traced function
(``[op.type for op in concrete.graph.get_operations()]``). They need TensorFlow's protos and
op names (``tf_ops``), which live above ``graph/``, so they are attached to ``Graph``,
``Node`` and ``ConcreteFunction`` by this module rather than defined there (docs/internals.md:
layering by installation from above). ``concrete.graph`` is the graph tapeflow runs (after its
optimizer), so it shows the ops that execute.
"""

from __future__ import annotations

from typing import Any

from tapeflow.graph.function import ConcreteFunction
from tapeflow.graph.ir import Graph, Node, SymbolicTensor


def _type(node: Node) -> str:
    """TensorFlow's op type (``ResizeBilinear`` for ``tf.image.resize``)."""
    from tapeflow.summary.tf_ops import tf_type

    return tf_type(node)


def _node_def(node: Node) -> Any:
    """The node as TensorFlow's ``NodeDef`` (inputs by name, TensorFlow's attributes)."""
    from tapeflow.framework.variable import Variable
    from tapeflow.summary import _tb
    from tapeflow.summary.function_def import Library, node_attrs
    from tapeflow.summary.graph_def import variable_name

    op_type = _type(node)
    nd = _tb.proto("node_def_pb2").NodeDef(name=node.name, op=op_type)
    var = node.attrs.get("var")
    if isinstance(var, Variable):  # its handle, as the GraphDef names it
        nd.input.append(variable_name(var))
    nd.input.extend(t.node.name if t.index == 0 else t.name for t in node.inputs)
    nd.input.extend(f"^{c.name}" for c in node.control_inputs)
    for key, value in node_attrs(node, op_type, Library()).items():
        nd.attr[key].CopyFrom(value)
    return nd


def _from_attr_value(value: Any) -> Any:
    """An AttrValue as ``Operation.get_attr`` returns it in TensorFlow."""
    from tapeflow.framework.shapes import TensorShape
    from tapeflow.summary.tf_ops import from_data_type

    def shape(proto: Any) -> TensorShape:
        if proto.unknown_rank:
            return TensorShape(None)
        return TensorShape([None if d.size < 0 else d.size for d in proto.dim])

    kind = value.WhichOneof("value")
    if kind == "list":
        for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
            items = list(getattr(value.list, field))
            if items:
                convert = {"type": from_data_type, "shape": shape}.get(field)
                return [convert(x) for x in items] if convert else items
        return []
    if kind == "type":
        return from_data_type(value.type)
    if kind == "shape":
        return shape(value.shape)
    return getattr(value, kind) if kind else None


def _get_attr(node: Node, name: str) -> Any:
    """The value of attribute `name` as TensorFlow gives it (a DType for ``T``, bytes for
    strings, a TensorShape, a TensorProto for ``value``)."""
    attrs = _node_def(node).attr
    if name not in attrs:
        raise ValueError(f"Operation '{node.name}' has no attr named '{name}'.")
    return _from_attr_value(attrs[name])


def _values(node: Node) -> tuple:
    """The node's outputs (``Operation.values()``)."""
    return tuple(node.outputs)


def _as_graph_def(graph: Graph, from_version: int | None = None,
                  add_shapes: bool = False) -> Any:
    """The graph as TensorFlow's ``GraphDef`` (constants in full; ``_output_shapes`` when
    `add_shapes`; cond branches and loop bodies in its function library)."""
    from tapeflow.summary.graph_def import to_graph_def

    tf1 = not graph.building_function and type(graph) is Graph
    return to_graph_def(graph, tf1, add_shapes=add_shapes, max_tensor=None)


def _function_def(concrete: ConcreteFunction) -> Any:
    """The function as TensorFlow's ``FunctionDef`` (summary/function_def.py)."""
    from tapeflow.summary.function_def import function_def

    return function_def(concrete.graph, f"__inference_{concrete.name}")


def _value_index(tensor: SymbolicTensor) -> int:
    return tensor.index


def install() -> None:
    """Attach the introspection API to the graph classes (idempotent)."""
    Node.type = property(_type)  # TensorFlow's type, as `tf_ops` maps it
    Node.node_def = property(_node_def)
    Node.get_attr = _get_attr
    Node.values = _values
    Node.device = ""
    Graph.as_graph_def = _as_graph_def
    ConcreteFunction.function_def = property(_function_def)
    SymbolicTensor.value_index = property(_value_index)

