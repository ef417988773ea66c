"""tapeflow graphs as TensorFlow ``FunctionDef`` protos (``ConcreteFunction.function_def``,
the library of a GraphDef whose graph holds ``tf.cond`` / ``tf.while_loop`` bodies).

As TensorFlow writes them: the signature has one input argument per graph input, named after
its placeholder in lower case (``x``), then one ``DT_RESOURCE`` argument per variable the
graph uses (``dense_readvariableop_resource``, after its first reader); node inputs name a
producer's output by its op definition's argument (``dense/MatMul:product:0``); outputs are
``identity``, ``identity_1``, ... Types and attributes come from ``tf_ops``.
"""

from __future__ import annotations

import re
from typing import Any

from tapeflow.summary import _tb, tf_ops

# tapeflow's attributes holding a sub-graph -> TensorFlow's function attribute
GRAPH_ATTRS = {"then_graph": "then_branch", "else_graph": "else_branch",
               "cond_graph": "cond", "body_graph": "body"}


class Library:
    """The functions a graph's nodes call (cond branches, loop bodies), each once, by name."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.functions: list[Any] = []
        self._taken: set[str] = set()

    def function_name(self, graph: Any, hint: str) -> str:
        """The name of `graph`'s FunctionDef, adding it (and its own callees) on first use."""
        if id(graph) not in self.names:
            base = name = _arg_name(hint)
            k = 0
            while name in self._taken:
                k += 1
                name = f"{base}_{k}"
            self._taken.add(name)
            self.names[id(graph)] = name
            self.functions.append(function_def(graph, name, self))
        return self.names[id(graph)]


def _arg_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name.lower()) or "arg"


def node_attrs(node: Any, op_type: str, library: Library, max_tensor: int | None = None
               ) -> dict[str, Any]:
    """`tf_ops.node_attrs` plus sub-graphs as functions of `library`."""
    attrs = tf_ops.node_attrs(node, op_type, max_tensor)
    A = _tb.proto("attr_value_pb2").AttrValue
    for key, tf_key in GRAPH_ATTRS.items():
        graph = node.attrs.get(key)
        if graph is not None:
            hint = f"{node.name}_{tf_key}"
            func = _tb.proto("attr_value_pb2").NameAttrList(
                name=library.function_name(graph, hint))
            attrs[tf_key] = A(func=func)
    return attrs


def function_def(graph: Any, name: str, library: Library | None = None) -> Any:
    """The FunctionDef of `graph` named `name` (module docstring)."""
    from tapeflow.framework.variable import Variable
    from tapeflow.graph.ir import SymbolicTensor

    function_pb2 = _tb.proto("function_pb2")
    node_def_pb2 = _tb.proto("node_def_pb2")
    library = library if library is not None else Library()
    fdef = function_pb2.FunctionDef()
    fdef.signature.name = name
    taken: set[str] = set()

    def unique(hint: str) -> str:
        base = arg = _arg_name(hint)
        k = 0
        while arg in taken:
            k += 1
            arg = f"{base}_{k}"
        taken.add(arg)
        return arg

    refs: dict[int, str] = {}  # id(tensor) -> how the function body names it
    inputs = {id(t.node) for t in graph.inputs}
    for t in graph.inputs:
        arg = unique(t.node.name)
        refs[id(t)] = arg
        fdef.signature.input_arg.add(name=arg, type=tf_ops.data_type(t.dtype))
    resources: dict[int, str] = {}
    for node in graph.nodes:
        var = node.attrs.get("var")
        if isinstance(var, Variable) and id(var) not in resources:
            resources[id(var)] = unique(f"{node.name}/resource")
            fdef.signature.input_arg.add(name=resources[id(var)],
                                         type=tf_ops.data_type("resource"))
    stateful = False
    for node in graph.nodes:
        if id(node) in inputs:
            continue
        op_type = tf_ops.tf_type(node)
        stateful = stateful or node.op.stateful
        for i, out in enumerate(node.outputs):
            arg, k = tf_ops.output_arg(op_type, i, len(node.outputs))
            refs[id(out)] = f"{node.name}:{arg}:{k}"
        nd = node_def_pb2.NodeDef(name=node.name, op=op_type)
        var = node.attrs.get("var")
        if isinstance(var, Variable):
            nd.input.append(resources[id(var)])
        nd.input.extend(refs[id(t)] for t in node.inputs)
        nd.input.extend(f"^{c.name}" for c in node.control_inputs)
        for key, value in node_attrs(node, op_type, library).items():
            nd.attr[key].CopyFrom(value)
        fdef.node_def.append(nd)
    fdef.signature.is_stateful = stateful
    outs = [t for t in graph.outputs if isinstance(t, SymbolicTensor)]
    for i, t in enumerate(outs):
        arg = "identity" if i == 0 else f"identity_{i}"
        fdef.signature.output_arg.add(name=arg, type=tf_ops.data_type(t.dtype))
        fdef.ret[arg] = refs[id(t)]
    return fdef
