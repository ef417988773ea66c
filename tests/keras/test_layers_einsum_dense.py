"""EinsumDense: kernel and bias shapes from the equation (Keras's examples), NumPy reference,
gradients, eager vs graph with an unknown batch, config, and errors."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


@pytest.mark.parametrize("equation, output_shape, bias_axes, x_shape, kernel, bias, out", [
    ("ab,bc->ac", 64, "c", (2, 32), (32, 64), (64,), (2, 64)),  # a Dense layer
    ("abc,cd->abd", (None, 64), "d", (2, 7, 32), (32, 64), (64,), (2, 7, 64)),
    ("abc,cde->abde", (None, 2, 3), "de", (2, 5, 4), (4, 2, 3), (2, 3), (2, 5, 2, 3)),
    ("abcd,cde->abe", (None, 4), "e", (2, 5, 2, 3), (2, 3, 4), (4,), (2, 5, 4)),
    ("...b,bc->...c", 64, "c", (2, 7, 32), (32, 64), (64,), (2, 7, 64)),
    ("ab...,bc->ac...", 64, "c", (2, 32, 3, 5), (32, 64), (64, 1, 1), (2, 64, 3, 5)),
    ("abc,cde->abde", (None, 2, 3), "d", (2, 5, 4), (4, 2, 3), (2, 1), (2, 5, 2, 3)),
])
def test_einsum_dense_shapes_and_numpy_reference(equation, output_shape, bias_axes, x_shape,
                                                 kernel, bias, out):
    layer = layers.EinsumDense(equation, output_shape, bias_axes=bias_axes,
                               bias_initializer="random_normal", dtype="float64")
    x = np.random.default_rng(0).standard_normal(x_shape)
    y = layer(x).numpy()
    assert [v.name for v in layer.weights] == ["einsum_dense/kernel:0", "einsum_dense/bias:0"]
    assert layer.kernel.shape == kernel and layer.bias.shape == bias and y.shape == out
    assert layer.count_params() == np.prod(kernel) + np.prod(bias)
    ref = np.einsum(equation, x, layer.kernel.numpy()) + layer.bias.numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    batchless = (None,) + x_shape[1:]
    assert layer.compute_output_shape(batchless) == (None,) + out[1:]


def test_einsum_dense_without_bias_and_with_activation():
    layer = layers.EinsumDense("abc,cd->abd", (None, 3), activation="relu")
    x = np.random.default_rng(1).standard_normal((2, 4, 5)).astype(np.float32)
    y = layer(x).numpy()
    assert layer.bias is None and [v.name for v in layer.weights] == ["einsum_dense/kernel:0"]
    np.testing.assert_allclose(y, np.maximum(x @ layer.kernel.numpy(), 0), rtol=1e-5,
                               atol=1e-6)


def test_einsum_dense_gradients_match_finite_differences():
    layer = layers.EinsumDense("abc,cde->abde", (None, 2, 2), bias_axes="de",
                               bias_initializer="random_normal", activation="tanh",
                               dtype="float64")
    check_layer_grads(layer, np.random.default_rng(2).standard_normal((2, 3, 3)))


def test_einsum_dense_graph_with_unknown_batch_equals_eager():
    layer = layers.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de",
                               bias_initializer="random_normal")
    x = np.random.default_rng(3).standard_normal((3, 5, 4)).astype(np.float32)
    eager = layer(x).numpy()
    graph = tf.function(lambda v: layer(v),
                        input_signature=[tf.TensorSpec([None, None, 4], tf.float32)])
    np.testing.assert_allclose(graph(tf.constant(x)).numpy(), eager, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(graph(tf.constant(x[:1, :2])).numpy(), eager[:1, :2],
                               rtol=1e-6, atol=1e-7)


def test_einsum_dense_functional_fit_and_config():
    inputs = tf.keras.Input(shape=(5, 4))
    hidden = layers.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de")(inputs)
    model = tf.keras.Model(inputs, layers.Dense(1)(layers.Flatten()(hidden)))
    assert model.layers[1].output_shape == (None, 5, 2, 3)
    assert model.count_params() == 4 * 6 + 6 + 30 + 1
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 5, 4)).astype(np.float32)
    y = x.sum(axis=(1, 2))[:, None]
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="mse")
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    config = model.layers[1].get_config()
    assert config["equation"] == "abc,cde->abde" and config["output_shape"] == (None, 2, 3)
    assert config["bias_axes"] == "de" and config["activation"] == "linear"
    assert config["kernel_initializer"]["class_name"] == "GlorotUniform"
    clone = layers.EinsumDense.from_config({**config, "name": "copy"})
    clone(x)
    clone.set_weights(model.layers[1].get_weights())
    np.testing.assert_allclose(clone(x).numpy(), model.layers[1](x).numpy(), rtol=1e-6)
    assert tf.keras.layers.experimental.EinsumDense is layers.EinsumDense


@pytest.mark.parametrize("make, x_shape, match", [
    (lambda: layers.EinsumDense("ab,bc", 3), (2, 3), r"EinsumDense: invalid equation 'ab,bc'"),
    (lambda: layers.EinsumDense("abc,cd->abd", (None, 3)), (2, 3),
     r"EinsumDense 'einsum_dense'.*3 input axes.*\(2, 3\)"),
    (lambda: layers.EinsumDense("ab,bc->ac", 3, bias_axes="x"), (2, 3),
     r"bias axes \['x'\] are not output axes"),
    (lambda: layers.EinsumDense("ab,bc->acd", 3), (2, 3), r"output_shape \(3,\) does not fit"),
    (lambda: layers.EinsumDense("ab,bc->ac", 3), (2, None), r"kernel axis 'b'.*unknown size"),
])
def test_einsum_dense_errors_name_the_layer_and_shapes(make, x_shape, match):
    with pytest.raises(ValueError, match=match):
        layer = make()
        if None in x_shape:
            layer.build(x_shape)
        else:
            layer(np.zeros(x_shape, np.float32))


def test_einsum_dense_refuses_inputs_of_another_size_after_building():
    layer = layers.EinsumDense("abc,cd->abd", (None, 3))
    layer(np.zeros((2, 4, 5), np.float32))
    with pytest.raises(ValueError, match=r"EinsumDense 'einsum_dense': input axis 'c'.*is 6 "
                                         r"\(input shape \(2, 4, 6\)\).*built for 5"):
        layer(np.zeros((2, 4, 6), np.float32))
