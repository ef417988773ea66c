"""Optimizers given tf.IndexedSlices gradients reach tf-keras 2.21's values (recorded by
reference/record_sparse_gradients.py): duplicate indices add up; untouched rows keep their
value under plain SGD, and under the legacy optimizers whose sparse kernels touch only the
gradient's rows."""

import json
from pathlib import Path

import numpy as np
import pytest

import tapeflow as tf

REF = json.loads((Path(__file__).parent / "reference" / "sparse_gradients.json").read_text())


@pytest.mark.parametrize("case", sorted(REF["results"]))
def test_indexed_slices_gradients_match_tf_keras(case):
    entry = REF["results"][case]
    var = tf.Variable(np.array(REF["start"], np.float32))
    namespace, _, name = case.rpartition(".")
    module = tf.keras.optimizers.legacy if namespace else tf.keras.optimizers
    opt = getattr(module, name.split("_")[0])(learning_rate=0.1, **entry["kwargs"])
    for values, indices in REF["steps"]:
        grad = tf.IndexedSlices(tf.constant(values), tf.constant(indices), tf.constant([4, 2]))
        opt.apply_gradients([(grad, var)])
    # float32 rounding: legacy Adam's sparse path orders its operations differently (7e-6)
    np.testing.assert_allclose(var.numpy(), entry["value"], rtol=1e-5, atol=2e-6)


def test_plain_sgd_leaves_untouched_rows():
    start = np.arange(8, dtype=np.float32).reshape(4, 2)
    var = tf.Variable(start)
    grad = tf.IndexedSlices(tf.ones([2, 2]), tf.constant([3, 3]), tf.constant([4, 2]))
    tf.keras.optimizers.SGD(0.5).apply_gradients([(grad, var)])
    np.testing.assert_array_equal(var.numpy()[:3], start[:3])
    np.testing.assert_array_equal(var.numpy()[3], start[3] - 1.0)


def _lookup_loss(table, ids):
    return tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, ids)))


def test_gather_gradient_of_a_variable_is_indexed_slices():
    """As in TF 2.21: rows' gradients at their indices, in the order the lookups ran."""
    v = tf.Variable(np.arange(8.0).reshape(4, 2))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.gather(v, [0, 2, 0]) * 2.0) + tf.reduce_sum(
            tf.nn.embedding_lookup(v, [[1]]))
    g = tape.gradient(y, v)
    assert isinstance(g, tf.IndexedSlices)
    assert g.indices.numpy().tolist() == [0, 2, 0, 1]  # TF 2.21's order
    assert g.values.numpy().tolist() == [[2, 2], [2, 2], [2, 2], [1, 1]]
    assert g.dense_shape.numpy().tolist() == [4, 2]
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy(),
                                  [[4, 4], [1, 1], [2, 2], [0, 0]])


def test_where_gradients_stay_dense():
    v = tf.Variable(np.arange(8.0).reshape(4, 2))
    x = tf.constant(np.arange(8.0).reshape(4, 2))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        mixed = _lookup_loss(v, [1, 1]) + tf.reduce_sum(v)        # dense + slices: dense
        other_axis = tf.reduce_sum(tf.gather(v, [1], axis=1))    # axis 1: dense, as TF
        through_identity = _lookup_loss(tf.identity(v), [3])     # Identity passes slices on
        of_tensor = _lookup_loss(x, [0])                         # a tensor source: dense
        row = tf.gather(v, [2])[0]
    assert not isinstance(tape.gradient(mixed, v), tf.IndexedSlices)
    np.testing.assert_array_equal(tape.gradient(mixed, v).numpy()[1], [1 + 4 * 2, 1 + 4 * 3])
    assert not isinstance(tape.gradient(other_axis, v), tf.IndexedSlices)
    assert isinstance(tape.gradient(through_identity, v), tf.IndexedSlices)
    assert not isinstance(tape.gradient(of_tensor, x), tf.IndexedSlices)
    jac = tape.jacobian(row, v)  # jacobians densify
    assert jac.shape == (2, 4, 2) and jac.numpy()[0, 2, 0] == 1


def test_lookup_gradient_finite_differences():
    """float64 finite differences of a loss through embedding_lookup, eager and traced."""
    table = np.random.RandomState(0).randn(5, 3)
    ids = tf.constant([[0, 3], [3, 4]])
    v = tf.Variable(table)

    def grad():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sin(tf.nn.embedding_lookup(v, ids)) * 1.5)
        return tf.convert_to_tensor(tape.gradient(loss, v))

    eps, numeric = 1e-6, np.zeros_like(table)
    for i, j in np.ndindex(*table.shape):
        for sign in (1, -1):
            t = table.copy()
            t[i, j] += sign * eps
            numeric[i, j] += sign * np.sum(np.sin(t[ids.numpy()]) * 1.5) / (2 * eps)
    np.testing.assert_allclose(grad().numpy(), numeric, atol=1e-8)
    np.testing.assert_allclose(tf.function(grad)().numpy(), numeric, atol=1e-8)


def test_sparse_update_keeps_earlier_reads_and_untouched_rows():
    v = tf.Variable(np.ones((6, 2), np.float32))
    before = v.read_value()
    opt = tf.keras.optimizers.SGD(0.5)
    with tf.GradientTape() as tape:
        loss = _lookup_loss(v, [4])
    opt.apply_gradients([(tape.gradient(loss, v), v)])
    np.testing.assert_array_equal(before.numpy(), np.ones((6, 2)))  # a read is a snapshot
    np.testing.assert_array_equal(v.numpy()[4], [0, 0])
    np.testing.assert_array_equal(np.delete(v.numpy(), 4, axis=0), np.ones((5, 2)))


@pytest.mark.parametrize("name", ["sgd", "adam", "adagrad", "rmsprop"])
def test_embedding_model_fit_equals_dense_gradients(name):
    """Keras fit with an Embedding (IndexedSlices gradients, applied sparsely where the rule
    allows) gives the same weights as a twin model whose lookup is a one-hot matmul (dense
    gradients)."""
    ids = np.array([[0, 2], [2, 5], [1, 1], [5, 0]])
    y = np.array([[1.0], [0.0], [1.0], [0.0]], np.float32)
    init = np.random.RandomState(1).randn(7, 3).astype(np.float32)

    def model(dense):
        tf.keras.utils.set_random_seed(3)
        inp = tf.keras.Input([2], dtype="int32")
        if dense:
            emb = tf.keras.layers.Dense(3, use_bias=False)
            h = emb(tf.one_hot(inp, 7))
        else:
            emb = tf.keras.layers.Embedding(7, 3)
            h = emb(inp)
        out = tf.keras.layers.Dense(1)(tf.keras.layers.Flatten()(h))
        m = tf.keras.Model(inp, out)
        emb.set_weights([init])
        m.compile(optimizer=tf.keras.optimizers.get({"class_name": name, "config": {
            "learning_rate": 0.1}}), loss="mse")
        m.fit(ids, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        return m.get_weights()

    for a, b in zip(model(False), model(True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_scaling_keeps_rows_sparse():
    g = tf.IndexedSlices(tf.ones([2, 3]), tf.constant([0, 2]), tf.constant([4, 3]))
    for scaled in (g * tf.constant(0.5), 0.5 * g, g / 2.0):
        assert isinstance(scaled, tf.IndexedSlices)
        np.testing.assert_array_equal(scaled.values.numpy(), np.full((2, 3), 0.5))
    dense = g * tf.ones([4, 3])
    np.testing.assert_array_equal(dense.numpy()[:, 0], [1, 0, 1, 0])
