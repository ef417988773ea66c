"""Graph introspection with TensorFlow's names (issue 22 item 7): op types, NodeDefs,
get_attr, lookups, GraphDefs and FunctionDefs, against what TensorFlow 2.21 gives for the same
functions (recorded by tests/fixtures/make_introspection_fixtures.py)."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import tapeflow as tf

pytest.importorskip("tensorboard")
from google.protobuf import text_format  # noqa: E402

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
from introspection_programs import programs  # noqa: E402

RECORDED = json.loads((FIXTURES / "tf_graphs" / "introspection.json").read_text())["programs"]
# TensorFlow-only plumbing: an Identity per output and a NoOp, Consts for the Python values
# tapeflow keeps as attributes, a resource Placeholder per captured variable
PLUMBING = {"Const", "Identity", "NoOp"}


def _concrete(name):
    fn, signature = programs(tf)[name]
    return tf.function(fn).get_concrete_function(*signature)


@pytest.mark.parametrize("name,traced", [("dense", False), ("branch", False),
                                         ("convnet", True)])
def test_op_types_and_attributes_are_tensorflows(name, traced):
    """Same op types in the same order, and every attribute TensorFlow sets has its value.
    (`convnet` reads the traced graph: concrete.graph is the optimized one, where Conv2D,
    BiasAdd and Relu are one _FusedConv2D, as in TensorFlow's Grappler.)"""
    concrete = _concrete(name)
    graph = concrete.traced_graph if traced else concrete.graph
    mine = [op for op in graph.get_operations() if op.type not in PLUMBING]
    theirs = [op for op in RECORDED[name]["ops"]
              if op["type"] not in PLUMBING and "resource" not in op["outputs"]]
    assert [op.type for op in mine] == [op["type"] for op in theirs]
    for op, expected in zip(mine, theirs):
        attrs = {k: text_format.MessageToString(v, as_one_line=True)
                 for k, v in op.node_def.attr.items()}
        for key, value in expected["attrs"].items():
            if key.startswith("_") or key in ("then_branch", "else_branch"):
                continue  # TF-internal attributes; function names carry a uid
            assert attrs.get(key) == value, (op.name, key)
        assert [t.dtype.name for t in op.outputs] == expected["outputs"]


def test_function_def_signature_and_body():
    concrete = _concrete("dense")
    fdef = concrete.function_def
    sig = fdef.signature
    recorded = RECORDED["dense"]
    from tapeflow.summary.tf_ops import from_data_type

    kinds = [(a.name if a.type != 20 else "resource", from_data_type(a.type))
             for a in sig.input_arg]
    assert kinds[0] == ("x", tf.float32)
    assert [k for k, _ in kinds[1:]] == ["resource", "resource"]
    assert len(sig.input_arg) == len(recorded["input_args"])
    assert [a.name for a in sig.output_arg] == [a for a, _ in recorded["output_args"]]
    assert sig.is_stateful
    by_name = {n.name: n for n in fdef.node_def}
    assert by_name["dense/MatMul"].op == "MatMul"
    assert list(by_name["dense/MatMul"].input) == ["x", "dense/ReadVariableOp:value:0"]
    assert by_name["dense/Relu"].input == ["dense/AddV2:z:0"]
    assert fdef.ret["identity"] == "Mul:z:0"
    args = {a.name for a in sig.input_arg}
    for node in fdef.node_def:  # every reference names an argument or a node's output
        for ref in node.input:
            assert ref in args or ref.split(":")[0] in by_name, ref


def test_cond_branches_are_library_functions():
    graph_def = _concrete("branch").graph.as_graph_def()
    (if_node,) = [n for n in graph_def.node if n.op == "StatelessIf"]
    functions = {f.signature.name: f for f in graph_def.library.function}
    then_fn = functions[if_node.attr["then_branch"].func.name]
    else_fn = functions[if_node.attr["else_branch"].func.name]
    assert [n.op for n in then_fn.node_def if n.op != "Const"] == ["Mul"]
    assert [n.op for n in else_fn.node_def] == ["Exp"]
    assert [d.size for d in if_node.attr["output_shapes"].list.shape[0].dim] == [4]


def test_get_attr_values_as_tensorflow_returns_them():
    concrete = _concrete("convnet")
    graph = concrete.traced_graph
    conv = graph.get_operation_by_name("Conv2D")
    assert conv.get_attr("T") == tf.float32 and isinstance(conv.get_attr("T"), tf.DType)
    assert conv.get_attr("padding") == b"SAME"
    assert conv.get_attr("strides") == [1, 1, 1, 1]
    assert conv.get_attr("use_cudnn_on_gpu") is True
    x = graph.get_operation_by_name("x")
    assert x.get_attr("shape") == tf.TensorShape([2, 8, 8, 2])
    cast = [op for op in graph.get_operations() if op.type == "Cast"][0]
    assert (cast.get_attr("SrcT"), cast.get_attr("DstT")) == (tf.float32, tf.float64)
    with pytest.raises(ValueError, match="has no attr named 'nope'"):
        conv.get_attr("nope")
    const = [op for op in graph.get_operations() if op.type == "Const"][0]
    value = const.get_attr("value")
    from tensorboard.util import tensor_util

    np.testing.assert_array_equal(tensor_util.make_ndarray(value), np.ones(4, np.float32))


def test_lookups_and_their_errors():
    graph = _concrete("dense").graph
    matmul = graph.get_operation_by_name("dense/MatMul")
    assert matmul.type == "MatMul" and matmul.name == "dense/MatMul"
    x = graph.get_tensor_by_name("x:0")
    assert matmul.inputs[0] is x and x.op.type == "Placeholder" and x.name == "x:0"
    assert x.value_index == 0 and matmul.values() == tuple(matmul.outputs)
    relu = graph.get_tensor_by_name("dense/Relu:0")
    assert relu.op.inputs[0].op.type == "AddV2"
    assert [op.name for op in matmul.outputs[0].consumers()] == ["dense/AddV2"]
    assert graph.get_operations()[0] is x.op
    with pytest.raises(KeyError, match="refers to an Operation not in the graph"):
        graph.get_operation_by_name("nope")
    with pytest.raises(KeyError, match="The operation, 'nope', does not exist"):
        graph.get_tensor_by_name("nope:0")
    with pytest.raises(ValueError, match="refers to an Operation, not a Tensor"):
        graph.get_tensor_by_name("dense/MatMul")
    with pytest.raises(KeyError, match="exists but only has 1 outputs"):
        graph.get_tensor_by_name("x:1")


def test_as_graph_def_names_every_input_and_keeps_constants():
    graph = _concrete("convnet").graph
    graph_def = graph.as_graph_def()
    names = {n.name for n in graph_def.node}
    for node in graph_def.node:
        for ref in node.input:
            assert ref.lstrip("^").split(":")[0] in names, ref
        assert "_output_shapes" not in node.attr
    ops = [n.op for n in graph_def.node]
    assert ops.count("VarHandleOp") == 1 and "_FusedConv2D" in ops and "ResizeBilinear" in ops
    assert "_output_shapes" in graph.as_graph_def(add_shapes=True).node[0].attr


def test_tf1_graph_node_def():
    with tf.compat.v1.Graph().as_default() as g:
        a = tf.constant([1.0, 2.0])
        tf.reduce_sum(a * 2.0, keepdims=True)
    total = g.get_operation_by_name("Sum")
    assert total.type == "Sum" and total.node_def.op == "Sum"
    assert total.get_attr("keep_dims") is True and total.get_attr("Tidx") == tf.int32
    assert [n.op for n in g.as_graph_def().node] == ["Const", "Const", "Mul", "Sum"]


def test_name_argument_names_the_node():
    """TF1 code names outputs with tf.identity(..., name=) and constants with name=, then
    fetches "scope/name:0"; the names are made unique as TensorFlow makes them."""
    tf1 = tf.compat.v1
    with tf1.Graph().as_default() as g:
        a = tf.constant([1.0, 2.0], name="a")
        x = tf1.placeholder(tf.float32, [None, 2], name="x")
        with tf.name_scope("head"):
            y = tf.identity(x * a, name="output")
            again = tf.identity(y, name="output")
        with tf1.Session() as sess:
            got = sess.run("head/output:0", {"x:0": np.ones((1, 2), np.float32)})
    np.testing.assert_array_equal(got, [[1.0, 2.0]])
    assert (a.name, y.name, again.name) == ("a:0", "head/output:0", "head/output_1:0")
    assert g.get_tensor_by_name("head/output:0") is y
    assert g.get_operation_by_name("a").type == "Const"
    assert "head/output" in {n.name for n in g.as_graph_def().node}
