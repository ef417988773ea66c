"""tf.compat.v1.train optimizers on tf.IndexedSlices gradients follow TF's sparse kernels:
duplicate indices summed, then (except Adam) only the gradient's rows and their slots change.
Values recorded from TF 2.21 eagerly and in TF1 graphs (record_v1_sparse.py)."""

import json
from pathlib import Path

import numpy as np
import pytest
from v1_sparse_cases import CASES, GRAPH_STEPS, START, run, run_graph

import tapeflow as tf

REF = json.loads((Path(__file__).parent / "fixtures" / "v1_sparse.json").read_text())


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=3e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_apply_gradients_matches_tf(name):
    for got, want in zip(run(tf, name), REF[name], strict=True):
        assert sorted(got) == sorted(want)
        for key in want:
            _close(got[key], want[key])


@pytest.mark.parametrize("name", ["momentum", "adam", "rmsprop_centered", "ftrl_regularized",
                                  "adadelta", "proximal_adagrad", "adagrad_da_regularized"])
def test_graph_minimize_on_embedding_lookup_matches_tf(name):
    _close(run_graph(tf, name), REF[f"graph_{name}"])


def _lookup_loss(table, fed):
    return tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, tf.constant(fed)) - 0.5))


@pytest.mark.parametrize("traced", [False, True])
def test_eager_minimize_of_a_callable_and_traced_steps(traced):
    """TF2-style use: minimize(loss_fn) eagerly, or apply_gradients in a tf.function."""
    table = tf.Variable(START)
    opt = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)

    def step(fed):
        with tf.GradientTape() as tape:
            loss = _lookup_loss(table, fed)
        grad = tape.gradient(loss, table)
        assert isinstance(grad, tf.IndexedSlices)
        opt.apply_gradients([(grad, table)])

    for fed in GRAPH_STEPS:
        if traced:
            tf.function(step)(fed)
        else:
            opt.minimize(lambda fed=fed: _lookup_loss(table, fed), var_list=[table])
    _close(table.numpy(), REF["graph_momentum"][-1])


def test_untouched_rows_keep_value_and_slots():
    table = tf.Variable(START)
    opt = tf.compat.v1.train.RMSPropOptimizer(0.05, momentum=0.5)
    assert opt.get_slot(table, "rms") is None and opt.get_slot_names() == ["momentum", "rms"]
    grad = tf.IndexedSlices(tf.ones([2, 2]), tf.constant([1, 1]), tf.constant([5, 2]))
    opt.apply_gradients([(grad, table)])
    row1 = (table.numpy()[1], opt.get_slot(table, "momentum").numpy()[1])
    opt.apply_gradients([(tf.IndexedSlices(tf.ones([1, 2]), tf.constant([3]),
                                           tf.constant([5, 2])), table)])
    np.testing.assert_array_equal(opt.get_slot(table, "rms").numpy()[[0, 2, 4]], 1.0)
    np.testing.assert_array_equal(table.numpy()[[0, 2, 4]], START[[0, 2, 4]])
    # row 1 had a gradient only in the first step: no momentum carried, no decay
    np.testing.assert_array_equal(table.numpy()[1], row1[0])
    np.testing.assert_array_equal(opt.get_slot(table, "momentum").numpy()[1], row1[1])


def test_global_step_helpers():
    v1 = tf.compat.v1
    with tf.Graph().as_default() as g:
        assert v1.train.get_global_step() is None
        step = v1.train.get_or_create_global_step()
        assert v1.train.get_or_create_global_step() is step
        assert v1.get_collection(v1.GraphKeys.GLOBAL_STEP) == [step]
        assert step.dtype == tf.int64 and not step.trainable
        with pytest.raises(ValueError, match="already exists"):
            v1.train.create_global_step(g)


@pytest.mark.parametrize("name", ["AdamOptimizer", "RMSPropOptimizer", "FtrlOptimizer"])
def test_traced_sparse_steps_equal_eager_ones(name):
    """Slots and Adam's beta powers created on the first traced call; lookups' IndexedSlices
    gradients applied inside tf.function give the eager numbers."""
    def train(traced):
        v = tf.Variable(START)
        opt = getattr(tf.compat.v1.train, name)(0.1)

        def step():
            with tf.GradientTape() as tape:
                loss = _lookup_loss(v, [[0, 2]])
            opt.apply_gradients([(tape.gradient(loss, v), v)])

        step = tf.function(step) if traced else step
        for _ in range(3):
            step()
        return v.numpy()

    np.testing.assert_allclose(train(True), train(False), rtol=1e-6)
