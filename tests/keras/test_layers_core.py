"""Core layers: Dense, Activation, Flatten, Reshape, Dropout, Lambda."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_dense_seed_004_weight_names_and_gradient_shapes():
    layer = layers.Dense(2, activation="relu")
    x = tf.constant([[1.0, 2.0, 3.0]])
    with tf.GradientTape() as tape:
        y = layer(x)
        loss = tf.reduce_mean(y ** 2)
    grads = tape.gradient(loss, layer.trainable_variables)
    assert [(v.name, tuple(g.shape)) for v, g in zip(layer.trainable_variables, grads)] == [
        ("dense/kernel:0", (3, 2)), ("dense/bias:0", (2,))]
    assert layers.Dense(1).name == "dense_1"


def test_dense_matches_numpy_and_keeps_leading_axes():
    rng = np.random.default_rng(0)
    layer = layers.Dense(4, activation="tanh", bias_initializer="ones")
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    out = layer(x)
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(out.numpy(), np.tanh(x @ kernel + bias), rtol=1e-5, atol=1e-6)
    assert out.shape == (2, 3, 4)
    assert layer.count_params() == 5 * 4 + 4


def test_dense_glorot_uniform_kernel_within_limit():
    tf.random.set_seed(1)
    layer = layers.Dense(300)
    layer.build((None, 200))
    limit = np.sqrt(6 / 500)
    kernel = layer.kernel.numpy()
    assert np.abs(kernel).max() <= limit
    assert abs(kernel.std() - limit / np.sqrt(3)) < 0.01 * limit
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(300, np.float32))


def test_dense_gradients_match_finite_differences():
    layer = layers.Dense(3, activation="sigmoid", dtype="float64")
    check_layer_grads(layer, np.random.default_rng(1).standard_normal((4, 2)))


def test_dense_regularizer_losses_and_no_bias():
    layer = layers.Dense(2, use_bias=False, kernel_initializer="ones",
                         kernel_regularizer=tf.keras.regularizers.l2(0.04))
    layer(np.ones((1, 2), np.float32))
    assert [v.name for v in layer.weights] == ["dense/kernel:0"]
    np.testing.assert_allclose([float(loss) for loss in layer.losses], [0.16], rtol=1e-6)


def test_dense_bad_arguments_name_the_layer():
    with pytest.raises(ValueError, match="units"):
        layers.Dense(0)
    with pytest.raises(ValueError, match="Unknown activation"):
        layers.Dense(2, activation="relux")
    layer = layers.Dense(2)
    layer(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match=f"layer '{layer.name}' \\(Dense\\).*value 3.*width 4"):
        layer(np.ones((1, 4), np.float32))


def test_activation_layer_by_name_and_callable():
    x = np.array([[-1.0, 0.5, 2.0]], np.float32)
    np.testing.assert_allclose(layers.Activation("relu")(x).numpy(), [[0.0, 0.5, 2.0]])
    soft = layers.Activation("softmax")(x).numpy()
    np.testing.assert_allclose(soft, np.exp(x) / np.exp(x).sum(), rtol=1e-6)
    np.testing.assert_allclose(layers.Activation(lambda t: t * 2.0)(x).numpy(), x * 2)


def test_flatten_and_reshape():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(layers.Flatten()(x).numpy(), x.reshape(2, 12))
    np.testing.assert_array_equal(layers.Reshape((4, 3))(x).numpy(), x.reshape(2, 4, 3))
    np.testing.assert_array_equal(layers.Reshape((-1, 2))(x).numpy(), x.reshape(2, 6, 2))
    assert layers.Reshape((-1, 2)).compute_output_shape((None, 3, 4)) == [None, 6, 2]
    assert layers.Flatten().compute_output_shape((None, 3, 4)) == [None, 12]
    with pytest.raises(ValueError, match="Reshape"):
        layers.Reshape((5, 5))(x)
    with pytest.raises(ValueError, match="at most one"):
        layers.Reshape((-1, -1))


def test_dropout_is_identity_at_inference_and_inverted_in_training():
    tf.random.set_seed(3)
    layer = layers.Dropout(0.25)
    x = np.ones((200, 50), np.float32)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    out = layer(x, training=True).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.02
    with pytest.raises(ValueError, match="rate"):
        layers.Dropout(1.0)


def test_dropout_gradient_flows_through_kept_units_only():
    tf.random.set_seed(4)
    x = tf.constant(np.ones((10, 10), np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layers.Dropout(0.5)(x, training=True)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, (y.numpy() != 0) * 2.0)


def test_dropout_follows_training_flag_of_outer_model_call():
    class Outer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.drop = layers.Dropout(0.5)

        def call(self, x):
            return self.drop(x)

    outer = Outer()
    x = np.ones((100, 100), np.float32)
    assert (outer(x, training=True).numpy() == 0).any()
    np.testing.assert_array_equal(outer(x, training=False).numpy(), x)


def test_lambda_layer_passes_arguments():
    layer = layers.Lambda(lambda t, k: t * k, arguments={"k": 3.0})
    np.testing.assert_allclose(layer(np.ones((1, 2), np.float32)).numpy(), [[3.0, 3.0]])
    with pytest.raises(TypeError, match="callable"):
        layers.Lambda(3)


def test_layer_errors_name_shapes_and_point_at_the_user_line():
    with pytest.raises(ValueError) as info:
        layers.Conv2D(2, 3)(np.zeros((4, 4, 3), np.float32))
    message = str(info.value)
    assert 'layer "conv2d"' in message and "(4, 4, 3)" in message
    assert "test_layers_core.py" in message and "layers.Conv2D(2, 3)(np.zeros" in message


def test_input_layer_is_re_exported():
    x = layers.Input(shape=(3,))
    model = tf.keras.Model(x, layers.Dense(2)(x))
    assert isinstance(model.layers[0], layers.InputLayer)
    assert model.output_shape == (None, 2)
