"""Merge layers, activation layers and keras.activations by name."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import activations, backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _xs(n, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


def test_elementwise_merges_match_numpy():
    a, b, c = _xs(3)
    np.testing.assert_allclose(layers.Add()([a, b, c]).numpy(), a + b + c, rtol=1e-6)
    np.testing.assert_allclose(layers.Subtract()([a, b]).numpy(), a - b, rtol=1e-6)
    np.testing.assert_allclose(layers.Multiply()([a, b, c]).numpy(), a * b * c, rtol=1e-6)
    np.testing.assert_allclose(layers.Average()([a, b]).numpy(), (a + b) / 2, rtol=1e-6)
    np.testing.assert_allclose(layers.Maximum()([a, b]).numpy(), np.maximum(a, b))
    np.testing.assert_allclose(layers.Minimum()([a, b]).numpy(), np.minimum(a, b))
    np.testing.assert_allclose(layers.add([a, b]).numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(layers.multiply([a, b]).numpy(), a * b, rtol=1e-6)


def test_concatenate_axis_and_gradients():
    a, b = _xs(2, (2, 3, 4))
    np.testing.assert_array_equal(layers.Concatenate()([a, b]).numpy(),
                                  np.concatenate([a, b], -1))
    np.testing.assert_array_equal(layers.concatenate([a, b], axis=1).numpy(),
                                  np.concatenate([a, b], 1))
    x, y = (tf.constant(v.astype(np.float64)) for v in (a, b))
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        out = layers.Concatenate(dtype="float64")([x, y])
        loss = tf.reduce_sum(out * tf.constant(np.arange(48.0).reshape(2, 3, 8)))
    gx, gy = tape.gradient(loss, [x, y])
    weights = np.arange(48.0).reshape(2, 3, 8)
    np.testing.assert_array_equal(gx.numpy(), weights[..., :4])
    np.testing.assert_array_equal(gy.numpy(), weights[..., 4:])


def test_merge_errors_name_the_layer_and_shapes():
    a, b = _xs(2)
    with pytest.raises(ValueError, match="at least 2 inputs"):
        layers.Add()([a])
    with pytest.raises(ValueError, match="matching shapes"):
        layers.Add()([a, np.zeros((2, 4), np.float32)])
    with pytest.raises(ValueError, match="except for the concatenation axis"):
        layers.Concatenate(axis=1)([a, np.zeros((3, 3), np.float32)])
    with pytest.raises(ValueError, match="exactly 2"):
        layers.Subtract()([a, b, a])


def test_activation_layers():
    x = np.array([[-2.0, -0.5, 0.0, 0.5, 3.0]], np.float32)
    np.testing.assert_allclose(layers.ReLU()(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(layers.ReLU(max_value=1.0)(x).numpy(), np.clip(x, 0, 1))
    np.testing.assert_allclose(layers.ReLU(negative_slope=0.1)(x).numpy(),
                               np.where(x > 0, x, 0.1 * x), rtol=1e-6)
    np.testing.assert_allclose(layers.ReLU(threshold=1.0)(x).numpy(), np.where(x > 1, x, 0))
    np.testing.assert_allclose(layers.LeakyReLU()(x).numpy(), np.where(x > 0, x, 0.3 * x),
                               rtol=1e-6)
    np.testing.assert_allclose(layers.ELU(alpha=0.5)(x).numpy(),
                               np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-6)
    np.testing.assert_allclose(layers.Softmax()(x).numpy(), np.exp(x) / np.exp(x).sum(),
                               rtol=1e-6)
    with pytest.raises(ValueError, match="negative_slope"):
        layers.ReLU(negative_slope=-1.0)


def _erf(v):
    from math import erf

    return np.vectorize(erf)(v)


ACTIVATIONS = {
    "linear": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softmax": lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True),
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "swish": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    "exponential": np.exp,
    "hard_sigmoid": lambda x: np.clip(0.2 * x + 0.5, 0, 1),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_by_name_matches_numpy_and_gradient(name):
    x = np.random.default_rng(1).standard_normal((3, 4)) * 2 + 0.1
    fn = activations.get(name)
    np.testing.assert_allclose(np.asarray(fn(tf.constant(x))), ACTIVATIONS[name](x),
                               rtol=1e-6, atol=1e-12)
    check_layer_grads(layers.Activation(name, dtype="float64"), x[:2] + 0.05)


def test_activations_get_and_serialize():
    assert activations.get(None) is activations.linear
    assert activations.get("relu") is activations.relu
    assert activations.serialize(activations.tanh) == "tanh"
    assert activations.get(np.abs) is np.abs
    with pytest.raises(ValueError, match="Unknown activation"):
        activations.get("rectifier")
    with pytest.raises(ValueError, match="1D"):
        activations.softmax(tf.constant([1.0, 2.0]))
