"""Compiler facts live on the op: graph/ names no op, and a new op's facts take effect from its
one definition (executor call, buffer ownership, worker thread, folding, simplification, cost)."""

from __future__ import annotations

import ast
import importlib
import pathlib
import pkgutil

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import REGISTRY, apply, op
from tapeflow.framework.shape_rules import same_as_first
from tapeflow.graph import schedule

GRAPH_DIR = pathlib.Path(tf.__file__).parent / "graph"


def _all_ops() -> set[str]:
    """Every registered op name, after importing every module that may define one."""
    for info in pkgutil.walk_packages(tf.__path__, "tapeflow."):
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: S112 - optional extras (onnx, mpi4py, ...) may be absent
            continue
    return set(REGISTRY)


def _definitions(tree: ast.AST) -> set[int]:
    """ids of the name strings in op definitions ``op("Name", ...)`` / ``Op("Name", ...)``."""
    found = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("op", "Op") and node.args
                and isinstance(node.args[0], ast.Constant)):
            found.add(id(node.args[0]))
    return found


def test_graph_package_names_no_op():
    names = _all_ops()
    assert {"MatMul", "Conv2D", "ReadVariableOp", "AddV2"} <= names  # the scan sees real ops
    hits = []
    for path in sorted(GRAPH_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        allowed = _definitions(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value in names and id(node) not in allowed):
                hits.append(f"{path.relative_to(GRAPH_DIR)}:{node.lineno}: {node.value!r}")
    assert not hits, "op names in graph/ (put the fact on the Op instead):\n" + "\n".join(hits)


def test_the_scan_finds_an_op_name_string(tmp_path):
    tree = ast.parse('if node.op.name == "MatMul": pass\n@op("Mine")\ndef f(): pass\n')
    allowed = _definitions(tree)
    found = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and id(n) not in allowed]
    assert found == ["MatMul"]


def _emit_twice(node, args, bind):
    return f"{bind(np.multiply)}({args[0]}, {bind(2.0)})"


@op("_FactsScaleForTest", elementwise=True, shape=same_as_first, emit=_emit_twice,
    output="fresh")
def _scale(x):
    raise AssertionError("the executor must call the op's emitted expression")


@op("_FactsPassForTest", shape=same_as_first, output="input")
def _pass(x):
    raise AssertionError("an op whose output is its input needs no call")


def test_emit_and_output_input_from_the_definition():
    f = tf.function(lambda x: apply(_pass, apply(_scale, x)) + 1.0)
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(f(x).numpy(), [3.0, 5.0])
    code = f.get_concrete_function(x).code
    assert "= multiply(x, " in code and "facts" not in code  # the emitted call, no kernel


@op("_FactsCallsForTest", shape=same_as_first, output="fresh")
def _fresh_copy(x):
    return x * 3.0


def test_fresh_output_lets_the_next_ufunc_write_into_it():
    f = tf.function(lambda x: tf.exp(apply(_fresh_copy, x)))
    x = tf.constant([0.0, 1.0])
    np.testing.assert_allclose(f(x).numpy(), np.exp([0.0, 3.0]), rtol=1e-6)
    assert "out=" in f.get_concrete_function(x).code


@op("_FactsShapeOnlyForTest", shape=lambda g, like: like, shape_only=(1,))
def _fill_like(g, like):
    return np.full(like.shape, 7.0, like.dtype)


def test_shape_only_inputs_fold_at_compile_time():
    f = tf.function(lambda x: apply(_fill_like, tf.constant(1.0), x * 2.0))
    x = tf.ones([3])
    np.testing.assert_array_equal(f(x).numpy(), [7.0, 7.0, 7.0])
    report = f.get_concrete_function(x).optimization_report()
    assert "folded 1 nodes" in report or "folded 2 nodes" in report, report


@op("_FactsNeutralForTest", elementwise=True, shape=same_as_first, neutral=(5, (1,)))
def _odd(x, y):
    raise AssertionError("simplify must bypass x (op) 5")


def test_neutral_operand_is_simplified_away():
    f = tf.function(lambda x: apply(_odd, x * 2.0, tf.constant(5.0)))
    np.testing.assert_array_equal(f(tf.constant([1.0])).numpy(), [2.0])


def _flops_for_test(node):
    return 1e12


@op("_FactsCostForTest", shape=same_as_first, flops=_flops_for_test, worker=True)
def _heavy(x):
    return x


def test_cost_estimate_comes_from_the_op():
    f = tf.function(lambda x: -apply(_heavy, x))
    graph = f.get_concrete_function(tf.ones([4])).graph
    heavy = next(n for n in graph.nodes if n.op is _heavy)
    light = next(n for n in graph.nodes if n.op.name == "Neg")
    assert schedule.estimate(heavy) == pytest.approx(40.0, rel=1e-3)  # 1e12 / 25e9 FLOP/s
    assert schedule.estimate(light) < 1e-3
    assert heavy.op.worker and not light.op.worker


def test_bad_facts_are_refused_at_definition():
    with pytest.raises(ValueError, match="output must be one of"):
        op("_FactsBadForTest", output="maybe")(lambda x: x)
    with pytest.raises(ValueError, match="variable must be"):
        op("_FactsBadForTest2", variable="peek")(lambda x: x)
