"""Seed programs that cross package boundaries, run as written with ``import tapeflow as tf``.

Each test quotes a seed document (shared/seeds/) and asserts what the seed prints or implies.
The TF1/TF2 programs of seed 004 and the LSTMCell of seed 003 are tested with graph mode
(tests/graph/test_compat_v1.py, tests/graph/test_seeds.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


def test_seed_004_subclassed_model_runs_the_same_eager_and_as_a_graph():
    class SequentialModel(tf.keras.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.flatten = tf.keras.layers.Flatten(input_shape=(28, 28))
            self.dense_1 = tf.keras.layers.Dense(128, activation="relu")
            self.dropout = tf.keras.layers.Dropout(0.2)
            self.dense_2 = tf.keras.layers.Dense(10)

        def call(self, x):
            x = self.flatten(x)
            x = self.dense_1(x)
            x = self.dropout(x)
            x = self.dense_2(x)
            return x

    input_data = tf.random.uniform([60, 28, 28])
    eager_model = SequentialModel()
    graph_model = tf.function(eager_model)
    eager_out = eager_model(input_data)
    graph_out = graph_model(input_data)
    assert eager_out.shape == (60, 10)
    np.testing.assert_allclose(graph_out.numpy(), eager_out.numpy(), rtol=1e-5, atol=1e-5)


def test_seed_003_while_loop_on_a_tensor_condition_and_to_code():
    @tf.function
    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    x = tf.random.uniform([10])
    expected = x.numpy()
    while expected.sum() > 1:
        expected = np.tanh(expected)
    np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-5)
    code = tf.autograph.to_code(f)
    assert "while" in code or "while_stmt" in code


def test_seed_003_embedding_summary_counts_vocab_times_dim(capsys):
    model = tf.keras.Sequential()
    model.add(tf.keras.layers.Embedding(1000, 64))
    model.summary()
    text = capsys.readouterr().out
    assert "(None, None, 64)" in text
    assert "Total params: 64,000" in text
    assert "Trainable params: 64,000" in text


def test_seed_003_mirrored_strategy_fit_learns_mnist_subset():
    (x_train, y_train), (x_test, y_test) = tf.datasets.load_mnist_5k()
    x = (x_train[:1024, ..., None] / 255.0).astype("float32")
    y = y_train[:1024].astype("int64")
    strategy = tf.distribute.MirroredStrategy()
    batch_size = 64 * strategy.num_replicas_in_sync
    train_dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1024, seed=1).batch(
        batch_size)
    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(10, activation="softmax"),
        ])
        model.compile(loss="sparse_categorical_crossentropy",
                      optimizer=tf.keras.optimizers.Adam(), metrics=["accuracy"])
    history = model.fit(train_dataset, epochs=2, verbose=0)
    losses = history.history["loss"]
    assert losses[1] < losses[0]
    xt = (x_test[:500, ..., None] / 255.0).astype("float32")
    _, accuracy = model.evaluate(xt, y_test[:500].astype("int64"), verbose=0)
    assert accuracy > 0.6  # chance is 0.1; 32 Adam steps reach ~0.75


def test_seed_002_checkpoint_round_trip_of_model_and_optimizer(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)),
                                 tf.keras.layers.Dense(2)])
    optimizer = tf.keras.optimizers.Adam(1e-2)
    global_step = tf.Variable(0, dtype=tf.int64, trainable=False)
    x = tf.random.normal([8, 3])
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    global_step.assign_add(1)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, global_step=global_step)
    save_path = checkpoint.save(str(tmp_path / "ckpt"))
    saved = [v.numpy().copy() for v in model.variables]
    for v in model.variables:
        v.assign(tf.zeros_like(v))
    global_step.assign(7)
    checkpoint.restore(save_path).assert_consumed()
    for v, s in zip(model.variables, saved):
        np.testing.assert_array_equal(v.numpy(), s)
    assert int(global_step.numpy()) == 1


@pytest.mark.parametrize("n", [3])
def test_seed_003_python_functions_of_tensors_and_numpy_interop(n):
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    foo = tf.matmul(a, a)
    assert str(foo) == ("tf.Tensor(\n[[ 7. 10.]\n [15. 22.]], shape=(2, 2), dtype=float32)")
    bar = foo.numpy()
    assert float(tf.reduce_sum(bar)) == 54.0
    assert isinstance(np.dot(a, a), np.ndarray)
    c = tf.Variable([[2.0]])
    d = tf.Variable([[3.0]])
    with tf.GradientTape() as tape:
        loss = c * d
    assert tape.gradient(loss, d).numpy().item() == 2.0
    assert tf.ones([n, n]).shape == (n, n)
