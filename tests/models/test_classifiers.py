"""The seed-004 CIFAR CNN and MLP, and the LSTM text classifier."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend
from tapeflow.models import MLP, CifarCNN, LSTMClassifier


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_seed_004_cifar_cnn_parameter_count_and_softmax_outputs():
    model = CifarCNN()
    assert model.count_params() == 1_250_858
    assert model.output_shape == (None, 10)
    probs = model(np.random.default_rng(0).random((2, 32, 32, 3)).astype(np.float32)).numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_seed_004_mlp_eager_and_graph_agree():
    eager_model = MLP()
    graph_model = tf.function(eager_model)
    input_data = tf.random.uniform([60, 28, 28])
    np.testing.assert_allclose(graph_model(input_data).numpy(), eager_model(input_data).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert eager_model.count_params() == 784 * 128 + 128 + 128 * 10 + 10
    assert [v.name for v in eager_model.trainable_variables][:2] == [
        "mlp/dense/kernel:0", "mlp/dense/bias:0"]


def test_lstm_classifier_learns_a_token_presence_task():
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.integers(1, 20, size=(64, 6))
    y = (x == 7).any(axis=1).astype(np.int64)
    model = LSTMClassifier(vocab_size=20, sequence_length=6, embed_dim=8, units=8)
    assert model.count_params() == 20 * 8 + (8 * 32 + 8 * 32 + 32) + (8 * 2 + 2)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=16, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.9
