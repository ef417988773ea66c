"""DenseNet through the functional API and through Sequential + DenseBlock (seed 001)."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend
from tapeflow.models import DenseBlock, DenseNet, DenseNetSequential


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_functional_densenet_has_the_issue_parameter_count():
    model = DenseNet(input_shape=(32, 32, 3), head_norm=False)
    assert model.count_params() == 129_930
    assert model.output_shape == (None, 10)
    with_head = DenseNet(input_shape=(32, 32, 3))
    assert with_head.count_params() == 129_930 + 4 * 160


def test_sequential_densenet_matches_functional_count_and_outputs():
    functional = DenseNet(input_shape=(16, 16, 3), growth_rate=4, num_blocks=2,
                          layers_per_block=3, initial_filters=6)
    sequential = DenseNetSequential(input_shape=(16, 16, 3), growth_rate=4, num_blocks=2,
                                    layers_per_block=3, initial_filters=6)
    assert sequential.count_params() == functional.count_params()
    assert [w.shape for w in sequential.weights] == [w.shape for w in functional.weights]
    assert any(isinstance(layer, DenseBlock) for layer in sequential.layers)
    sequential.set_weights(functional.get_weights())
    x = np.random.default_rng(0).standard_normal((2, 16, 16, 3)).astype(np.float32)
    np.testing.assert_allclose(sequential(x).numpy(), functional(x).numpy(), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(sequential(x, training=True).numpy(),
                               functional(x, training=True).numpy(), rtol=1e-4, atol=1e-5)


def test_dense_block_concatenates_growth_rate_channels_per_layer():
    block = DenseBlock(3, 5)
    out = block(np.zeros((1, 4, 4, 2), np.float32))
    assert out.shape == (1, 4, 4, 2 + 3 * 5)
    assert block.weights[0].name == "dense_block/batch_normalization/gamma:0"


def test_densenet_graph_step_equals_eager_step():
    tf.random.set_seed(0)
    model = DenseNet(input_shape=(8, 8, 1), growth_rate=3, num_blocks=2, layers_per_block=2,
                     initial_filters=4, num_classes=3)
    x = tf.constant(np.random.default_rng(1).standard_normal((4, 8, 8, 1)).astype(np.float32))
    y = tf.constant(np.array([0, 1, 2, 1]))

    def grads(inputs, labels):
        with tf.GradientTape() as tape:
            logits = model(inputs, training=False)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
        return loss, tape.gradient(loss, model.trainable_variables)

    eager_loss, eager_grads = grads(x, y)
    graph_loss, graph_grads = tf.function(grads)(x, y)
    np.testing.assert_allclose(graph_loss.numpy(), eager_loss.numpy(), rtol=1e-5)
    for a, b in zip(graph_grads, eager_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)


def test_densenet_rejects_bad_configuration():
    with pytest.raises(ValueError, match="growth_rate"):
        DenseNet(growth_rate=0)
