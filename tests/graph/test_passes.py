"""Optimizer passes one by one, the verifier after each, and what they must never touch."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors
from tapeflow.graph.ir import clone
from tapeflow.graph.passes import cse, dce, fold, simplify
from tapeflow.graph.passes.pipeline import optimize
from tapeflow.graph.verify import verify


def _traced(fn, *args):
    return fn.get_concrete_function(*args).traced_graph


def test_each_pass_keeps_the_graph_valid_and_the_result():
    @tf.function
    def f(x):
        a = tf.exp(x) * 1.0
        b = tf.exp(x)
        c = tf.constant([1.0, 2.0]) + tf.constant([3.0, 4.0])
        _ = tf.sqrt(x)
        return a + b + c

    x = tf.constant([0.5, 1.5])
    graph = _traced(f, x)
    for run in (fold.run, simplify.run, cse.run, dce.run):
        new, report = run(graph)
        verify(new)
        assert report.split(":")[0] in ("fold", "simplify", "cse", "dce")
    optimized, reports = optimize(graph, check=True)
    assert len(optimized.nodes) < len(graph.nodes)
    np.testing.assert_allclose(f(x).numpy(), 2 * np.exp([0.5, 1.5]) + [4.0, 6.0], rtol=1e-6)


def test_stateful_nodes_are_never_merged_folded_or_dropped():
    v = tf.Variable(0.0)

    @tf.function
    def f():
        a = tf.random.uniform([3], seed=None)
        b = tf.random.uniform([3], seed=None)
        v.assign_add(1.0)
        return a - b

    graph = f.get_concrete_function().graph
    assert sum(n.op.name == "RandomUniform" or n.op.random for n in graph.nodes) == 2
    assert any(n.op.name.startswith("AssignAdd") for n in graph.nodes)
    assert np.any(f().numpy() != 0.0)
    assert float(v.numpy()) == 1.0  # one call, one increment


def test_verifier_rejects_use_before_definition():
    @tf.function
    def f(x):
        return tf.exp(x) + 1.0

    graph, _ = clone(_traced(f, tf.constant(1.0)))
    graph.nodes.reverse()
    with pytest.raises(errors.InternalError, match="before it is defined"):
        verify(graph)


def test_verifier_rejects_wrong_static_shape():
    @tf.function
    def f(x):
        return tf.exp(x)

    graph, _ = clone(_traced(f, tf.ones([2])))
    exp = next(n for n in graph.nodes if n.op.name == "Exp")
    exp.outputs[0]._shape = tf.TensorShape([3])
    with pytest.raises(errors.InternalError, match="shape rule says"):
        verify(graph)


def test_fold_uses_static_shapes_of_shape_only_inputs():
    @tf.function
    def f(x):
        return tf.zeros_like(x) + tf.ones_like(x) * 2.0 + x

    concrete = f.get_concrete_function(tf.ones([3]))
    assert not any(n.op.name in ("ZerosLike", "OnesLike") for n in concrete.graph.nodes)
    np.testing.assert_allclose(f(tf.constant([1.0, 2.0, 3.0])).numpy(), [3.0, 4.0, 5.0])


def test_assign_sub_reuses_the_dying_update_buffer_without_touching_old_values():
    v = tf.Variable(np.ones(4, np.float32))
    before = v.read_value()

    @tf.function
    def step(g):
        v.assign_sub(g * 0.5)

    step(tf.constant(np.arange(4, dtype=np.float32)))
    assert "_assign_sub_into" in "".join(
        str(val) for val in step.get_concrete_function(tf.ones([4]))._fn.__globals__.values())
    np.testing.assert_allclose(v.numpy(), [1.0, 0.5, 0.0, -0.5])
    np.testing.assert_allclose(before.numpy(), np.ones(4))


def test_split_of_a_concat_into_the_same_pieces_is_bypassed():
    @tf.function
    def f(a, b):
        both = tf.concat([a * 2.0, b * 3.0], axis=-1)
        left, right = tf.split(both, 2, axis=-1)  # the same pieces: forwarded
        first, rest = tf.split(both, [1, 5], axis=-1)  # other cuts: kept
        return left - right, first, rest

    a = np.arange(12.0).reshape(4, 3)
    b = -np.arange(12.0).reshape(4, 3)
    concrete = f.get_concrete_function(tf.constant(a), tf.constant(b))
    report = simplify.run(concrete.traced_graph)[1]
    assert report == "simplify: bypassed 1 no-op nodes"
    assert sum(n.op.name == "SplitV" for n in concrete.graph.nodes) == 1
    diff, first, rest = f(tf.constant(a), tf.constant(b))
    np.testing.assert_array_equal(diff.numpy(), 2 * a - 3 * b)
    np.testing.assert_array_equal(first.numpy(), 2 * a[:, :1])
    np.testing.assert_array_equal(rest.numpy(), np.concatenate([2 * a[:, 1:], 3 * b], -1))
