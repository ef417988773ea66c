"""The table_first pass: products on an embedding table's rows instead of the looked-up rows,
forward and backward, with eager's results (float rounding apart) and finite differences'
gradients."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.passes import table_first
from tapeflow.testing import numeric_gradient

_IDS = np.array([[0, 3, 4, 3, 1, 0], [2, 2, 4, 0, 1, 3]], np.int32)  # [B=2, T=6], 5 rows used


def _step(table, kernel, ids, time_major=True):
    """A lookup, a time-major reordering and a product, as an LSTM's input projection; the
    loss and its gradients for the table and the kernel."""
    with tf.GradientTape() as tape:
        tape.watch([table, kernel])
        rows = tf.gather(table, ids)
        if time_major:
            rows = tf.transpose(rows, [1, 0, 2])
        y = tf.matmul(tf.reshape(rows, [-1, table.shape[1]]), kernel)
        loss = tf.reduce_sum(tf.tanh(y) * tf.cos(y))
    d_table, d_kernel = tape.gradient(loss, [table, kernel])
    return loss, tf.convert_to_tensor(d_table), d_kernel


def _inputs(rows=5, width=3, out=4, dtype=np.float64):
    rng = np.random.default_rng(0)
    return (tf.constant(rng.standard_normal((rows, width)).astype(dtype)),
            tf.constant(rng.standard_normal((width, out)).astype(dtype)))


def _rewritten(graph_fn, *args) -> int:
    report = graph_fn.get_concrete_function(*args).optimization_report()
    line = next(x for x in report.splitlines() if x.startswith("table_first"))
    return int(line.split()[2])


@pytest.mark.parametrize("time_major", [True, False])
def test_table_products_give_eager_results_forward_and_backward(time_major):
    table, kernel = _inputs()
    ids = tf.constant(_IDS)
    graph_fn = tf.function(lambda t, k, i: _step(t, k, i, time_major))
    assert _rewritten(graph_fn, table, kernel, ids) == 3  # forward, kernel's and table's grads
    names = [n.op.name for n in graph_fn.get_concrete_function(table, kernel, ids).graph.nodes]
    assert names.count("ScatterAddLike") == 1  # one scatter serves both gradients
    for got, want in zip(graph_fn(table, kernel, ids), _step(table, kernel, ids, time_major)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_constant_ids_fold_their_reordering_and_match_eager():
    table, kernel = _inputs()
    graph_fn = tf.function(lambda t, k: _step(t, k, tf.constant(_IDS)))
    assert _rewritten(graph_fn, table, kernel) == 3
    for got, want in zip(graph_fn(table, kernel), _step(table, kernel, tf.constant(_IDS))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_rewritten_gradients_match_finite_differences_in_float64():
    table, kernel = _inputs()
    ids = tf.constant(_IDS)
    graph_fn = tf.function(_step)
    _, d_table, d_kernel = graph_fn(table, kernel, ids)
    assert _rewritten(graph_fn, table, kernel, ids) == 3

    def loss_of_table(t):
        return float(graph_fn(tf.constant(t), kernel, ids)[0].numpy())

    def loss_of_kernel(k):
        return float(graph_fn(table, tf.constant(k), ids)[0].numpy())

    np.testing.assert_allclose(d_table.numpy(), numeric_gradient(loss_of_table, table.numpy()),
                               rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(d_kernel.numpy(),
                               numeric_gradient(loss_of_kernel, kernel.numpy()),
                               rtol=1e-7, atol=1e-8)


def test_a_lookup_with_fewer_rows_than_the_table_is_left_alone():
    table, kernel = _inputs(rows=20)
    ids = tf.constant(_IDS)
    graph_fn = tf.function(_step)
    assert _rewritten(graph_fn, table, kernel, ids) == 0
    for got, want in zip(graph_fn(table, kernel, ids), _step(table, kernel, ids)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_a_reshape_that_splits_rows_is_left_alone():
    table, kernel = _inputs(width=4)

    @tf.function
    def f(t, k):
        rows = tf.reshape(tf.gather(t, tf.constant(_IDS)), [-1, 2])  # halves of rows
        return tf.matmul(rows, k[:2])

    graph = f.get_concrete_function(table, kernel).traced_graph
    assert "rewrote 0" in table_first.run(graph)[1]
    want = tf.matmul(tf.reshape(tf.gather(table, _IDS), [-1, 2]), kernel[:2])
    np.testing.assert_allclose(f(table, kernel).numpy(), want.numpy(), rtol=1e-12)


def _lstm_model():
    layers = tf.keras.layers
    tf.random.set_seed(1)
    inp = tf.keras.Input((6,), dtype="int32")
    out = layers.Dense(3)(layers.LSTM(8)(layers.Embedding(5, 4)(inp)))
    return tf.keras.Model(inp, out)


def _train(wrap) -> tuple:
    """Three Adam steps of a fresh model, the step `wrap`ped: (losses, variables, step)."""
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = tf.constant(_IDS), tf.constant([0, 2])
    model, opt = _lstm_model(), tf.keras.optimizers.Adam(0.1)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    fn = wrap(step)
    losses = [fn(x, y).numpy() for _ in range(3)]
    return losses, [v.numpy() for v in model.trainable_variables], fn


def test_embedding_lstm_training_step_matches_eager_within_float32_rounding():
    """W10's step in small: Adam densifies the embedding's gradient by a row scatter, which the
    pass moves ahead of the input projection's gradient."""
    eager_losses, eager_vars, _ = _train(lambda f: f)
    graph_losses, graph_vars, fn = _train(tf.function)
    assert _rewritten(fn, tf.constant(_IDS), tf.constant([0, 2])) == 3
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=2e-5)
    for got, want in zip(graph_vars, eager_vars):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_rewritten_step_gives_the_same_bits_run_to_run():
    first, second = _train(tf.function), _train(tf.function)
    assert first[0] == second[0]
    for a, b in zip(first[1], second[1]):
        np.testing.assert_array_equal(a, b)
