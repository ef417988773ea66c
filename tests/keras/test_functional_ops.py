"""TF ops and Python operators on KerasTensors record TFOpLambda layers in functional models."""

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.framework import errors
from tapeflow.keras import backend, layers
from tapeflow.keras.engine.op_lambda import TFOpLambda


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _relu(a):
    return np.maximum(a, 0)


def test_operators_and_ops_build_a_model_that_computes_them():
    x = keras.Input((4,))
    y = tf.nn.relu(x * 2 - 1)
    z = tf.concat([y, -x], -1)
    s = tf.nn.softmax(z)
    r = tf.reduce_mean(s, axis=-1, keepdims=True) + x[:, 1:2] ** 2
    m = tf.reshape(x, (-1, 2, 2)) @ np.eye(2, dtype=np.float32)[::-1]
    model = keras.Model(x, [r, m, 3.0 / (1 + abs(x))])
    assert y.shape.as_tuple() == (None, 4) and z.shape.as_tuple() == (None, 8)
    assert model.output_shape == [(None, 1), (None, 2, 2), (None, 4)]
    assert all(isinstance(layer, TFOpLambda) for layer in model.layers[1:])
    assert model.count_params() == 0

    a = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    out_r, out_m, out_d = model(a)
    zz = np.concatenate([_relu(a * 2 - 1), -a], -1)
    soft = np.exp(zz) / np.exp(zz).sum(-1, keepdims=True)
    np.testing.assert_allclose(out_r.numpy(), soft.mean(-1, keepdims=True) + a[:, 1:2] ** 2,
                               rtol=1e-5)
    np.testing.assert_allclose(out_m.numpy(), a.reshape(-1, 2, 2)[..., ::-1], rtol=1e-6)
    np.testing.assert_allclose(out_d.numpy(), 3.0 / (1 + np.abs(a)), rtol=1e-6)


def test_constants_take_the_dtype_of_the_symbolic_input():
    f = keras.Input((3,), dtype="float64")
    i = keras.Input((3,), dtype="int32")
    shift = np.array([1.0, 2.0, 3.0])
    model = keras.Model([f, i], [f * 2 + 0.5, i * 3 + 1, tf.cast(i, "float64") + f,
                                 shift + f])
    assert [o.dtype.name for o in model.outputs] == ["float64", "int32", "float64", "float64"]
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6, dtype=np.int32).reshape(2, 3)
    of, oi, oc, os_ = model([a, b])
    np.testing.assert_array_equal(os_.numpy(), shift + a)
    assert of.dtype.name == "float64" and oi.dtype.name == "int32"
    np.testing.assert_array_equal(of.numpy(), a * 2 + 0.5)
    np.testing.assert_array_equal(oi.numpy(), b * 3 + 1)
    np.testing.assert_array_equal(oc.numpy(), a + b)


def test_layers_between_ops_train_and_gradients_match_numpy():
    x = keras.Input((3,))
    dense = layers.Dense(2, kernel_initializer="ones", bias_initializer="zeros")
    h = dense(x * 0.5)
    out = tf.reduce_sum(tf.nn.relu(h) * h, axis=-1, keepdims=True)
    model = keras.Model(x, out)
    a = np.array([[1.0, -2.0, 3.0], [0.5, 0.5, -4.0]], np.float32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(a))
    gk, gb = tape.gradient(loss, [dense.kernel, dense.bias])
    pre = (a * 0.5).sum(1, keepdims=True) * np.ones((1, 2))
    dy = 2 * _relu(pre)  # d(relu(h) * h)/dh = 2 relu(h)
    np.testing.assert_allclose(gk.numpy(), (a * 0.5).T @ dy, rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), dy.sum(0), rtol=1e-6)


def test_fit_traced_equals_eager_through_op_layers():
    rng = np.random.default_rng(1)
    data, target = rng.normal(size=(12, 3)).astype(np.float32), rng.normal(size=(12, 1))

    def build(run_eagerly):
        backend.clear_session()
        x = keras.Input((3,))
        h = layers.Dense(4, kernel_initializer="glorot_uniform")(tf.tanh(x) + x)
        model = keras.Model(x, layers.Dense(1, kernel_initializer="ones")(h * tf.sigmoid(h)))
        for layer in model.layers:
            for w in layer.weights:
                w.assign(np.linspace(-1, 1, int(np.prod(w.shape)), dtype=np.float32)
                         .reshape(w.shape))
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", run_eagerly=run_eagerly)
        return model

    traced = build(False).fit(data, target, batch_size=5, epochs=3, shuffle=False, verbose=0)
    eager = build(True).fit(data, target, batch_size=5, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(traced.history["loss"], eager.history["loss"], rtol=1e-5)
    assert traced.history["loss"][-1] < traced.history["loss"][0]


def test_two_symbolic_inputs_make_one_node_and_summary_shows_connections():
    a, b = keras.Input((2,), name="a"), keras.Input((2,), name="b")
    s = a + b
    model = keras.Model([a, b], tf.maximum(s, b))
    layer = model.layers[-2]
    assert isinstance(layer, TFOpLambda) and layer.name.startswith("tf.")
    assert [t._keras_history[0].name for t in layer._inbound_nodes[0].keras_inputs] == ["a", "b"]
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert " tf.__operators__.add (TFOpLamb" in text  # long names wrap, as in Keras
    assert any(line.startswith(" tf.math.maximum (TFOpLambda)") and
               "'tf.__operators__.add[0][0]'" in line for line in lines)
    out = model([np.array([[1.0, -5.0]]), np.array([[0.5, 0.5]])])
    np.testing.assert_array_equal(out.numpy(), [[1.5, 0.5]])


def test_probing_with_zeros_raises_no_floating_point_warnings():
    x = keras.Input((4,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = tf.math.log(x) / x
    assert y.shape.as_tuple() == (None, 4)


def test_bad_op_on_symbolic_input_names_the_op_and_shapes():
    x = keras.Input((4,))
    with pytest.raises(errors.InvalidArgumentError) as info:
        tf.matmul(x, np.ones((3, 2), np.float32))
    message = str(info.value)
    assert "MatMul" in message and "[3, 2]" in message
    assert "layer 'tf.linalg.matmul'" in message and "(None, 4)" in message
    assert "test_functional_ops.py" in message


def test_keras_tensors_stay_hashable_and_compare_by_identity():
    x = keras.Input((4,))
    y = x + 1
    assert {x: 1, y: 2}[y] == 2 and x != y and x == x
    with pytest.raises(TypeError, match="bool"):
        bool(x > 0)


def test_multi_output_ops_integer_inputs_and_comparisons():
    x = keras.Input((6,))
    labels = keras.Input((), dtype="int32")
    left, right = tf.split(x, 2, axis=-1)
    gated = tf.where(left > 0, right, 0.0)
    model = keras.Model([x, labels], [gated, tf.one_hot(labels, 4) * tf.reduce_max(x, axis=1,
                                                                                   keepdims=True)])
    assert model.output_shape == [(None, 3), (None, 4)]
    a = np.random.default_rng(4).normal(size=(5, 6)).astype(np.float32)
    b = np.array([0, 3, 1, 2, 3], np.int32)
    out_g, out_h = model([a, b])
    np.testing.assert_array_equal(out_g.numpy(), np.where(a[:, :3] > 0, a[:, 3:], 0.0))
    np.testing.assert_allclose(out_h.numpy(), np.eye(4)[b] * a.max(1, keepdims=True))


def test_op_layers_are_named_after_the_function_called():
    x = keras.Input((4,))
    outs = [tf.nn.relu(x), tf.concat([x, x], -1), tf.math.reduce_mean(x, 1), x * 2, x + 1,
            tf.math.abs(x), tf.reshape(x, (-1, 2, 2)), tf.nn.relu(x)]
    names = [layer.name for layer in keras.Model(x, outs).layers[1:]]
    assert names == ["tf.nn.relu", "tf.concat", "tf.math.reduce_mean", "tf.math.multiply",
                     "tf.__operators__.add", "tf.math.abs", "tf.reshape", "tf.nn.relu_1"]
