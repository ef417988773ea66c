"""Functional API, Sequential, subclassed models: shapes, layers, summary, agreement."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_input_gives_none_batch_and_layer_outputs_infer_shapes():
    inp = keras.Input(shape=(28, 28))
    assert inp.shape.as_tuple() == (None, 28, 28)
    x = layers.Flatten()(inp)
    out = layers.Dense(10)(x)
    assert x.shape.as_tuple() == (None, 784)
    assert out.shape.as_tuple() == (None, 10)
    model = keras.Model(inp, out)
    assert model.name == "model" and model.output_shape == (None, 10)
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Flatten", "Dense"]
    assert model.layers[2].kernel.name == "dense/kernel:0"


def test_unknown_inner_dims_stay_unknown():
    inp = keras.Input(shape=(None, 3))
    out = layers.Dense(4)(inp)
    assert out.shape.as_tuple() == (None, None, 4)


def test_multi_input_multi_output_and_call():
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    merged = layers.Concatenate()([a, b])
    head1, head2 = layers.Dense(2)(merged), layers.Dense(1)(merged)
    model = keras.Model([a, b], [head1, head2])
    assert model.output_shape == [(None, 2), (None, 1)]
    xa, xb = np.ones((5, 4), np.float32), np.ones((5, 3), np.float32)
    out1, out2 = model([xa, xb])
    cat = np.concatenate([xa, xb], axis=1)
    dense1, dense2 = model.layers[3], model.layers[4]
    np.testing.assert_allclose(out1.numpy(), cat @ dense1.kernel.numpy() + dense1.bias.numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(out2.numpy(), cat @ dense2.kernel.numpy(), rtol=1e-6)
    by_name = model({"a": xa, "b": xb})
    np.testing.assert_allclose(by_name[0].numpy(), out1.numpy())


def test_shared_layer_weights_counted_once():
    inp = keras.Input((5,))
    shared = layers.Dense(3)
    out = layers.Add()([shared(inp), shared(inp)])
    model = keras.Model(inp, out)
    assert len(model.trainable_weights) == 2 and model.count_params() == 18
    x = np.arange(5, dtype=np.float32)[None]
    np.testing.assert_allclose(model(x).numpy(), 2 * shared(x).numpy(), rtol=1e-6)


def test_nested_model_as_layer():
    inner_in = keras.Input((4,))
    inner = keras.Model(inner_in, layers.Dense(3)(inner_in), name="inner")
    outer_in = keras.Input((4,))
    outer = keras.Model(outer_in, layers.Dense(1)(inner(outer_in)))
    assert outer.output_shape == (None, 1)
    assert len(outer.trainable_weights) == 4
    assert outer(np.ones((2, 4), np.float32)).shape.as_tuple() == (2, 1)


def test_graph_disconnected_error():
    a, b = keras.Input((2,)), keras.Input((2,))
    out = layers.Add()([a, b])
    with pytest.raises(ValueError, match="Graph disconnected"):
        keras.Model(a, out)


def test_sequential_functional_subclassed_agree():
    weights = [np.random.default_rng(0).normal(size=s).astype(np.float32)
               for s in [(6, 4), (4,), (4, 2), (2,)]]
    seq = keras.Sequential([layers.Dense(4, input_shape=(6,)), layers.Dense(2)])
    inp = keras.Input((6,))
    func = keras.Model(inp, layers.Dense(2)(layers.Dense(4)(inp)))

    class Sub(keras.Model):
        def __init__(self):
            super().__init__()
            self.d1, self.d2 = layers.Dense(4), layers.Dense(2)

        def call(self, x):
            return self.d2(self.d1(x))

    sub = Sub()
    sub.build((None, 6))
    x = np.random.default_rng(1).normal(size=(3, 6)).astype(np.float32)
    outs = []
    for model in (seq, func, sub):
        model.set_weights(weights)
        outs.append(model(x).numpy())
    expected = (x @ weights[0] + weights[1]) @ weights[2] + weights[3]
    for out in outs:
        np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_sequential_add_and_deferred_build_names():
    model = keras.Sequential()
    model.add(layers.Dense(3))
    model.add(layers.Dense(1))
    assert not model.built
    model(np.ones((2, 5), np.float32))
    assert model.output_shape == (None, 1)
    assert [v.name for v in model.weights] == ["dense/kernel:0", "dense/bias:0",
                                               "dense_1/kernel:0", "dense_1/bias:0"]
    with pytest.raises(ValueError, match="unique names"):
        model.add(layers.Dense(1, name="dense"))


SEQUENTIAL_SUMMARY = """\
Model: "sequential"
_________________________________________________________________
 Layer (type)                Output Shape              Param #
=================================================================
 dense (Dense)               (None, 64)                50240

 dense_1 (Dense)             (None, 10)                650

=================================================================
Total params: 50,890
Trainable params: 50,890
Non-trainable params: 0
_________________________________________________________________
"""


def test_sequential_summary_text():
    model = keras.Sequential([layers.Dense(64, input_shape=(784,)), layers.Dense(10)])
    lines = []
    model.summary(print_fn=lines.append)
    assert "\n".join(line.rstrip() for line in lines) + "\n" == SEQUENTIAL_SUMMARY
    assert all(len(line) == 65 for line in lines[1:8])  # table rows are padded to full width


def test_summary_counts_non_trainable_and_functional_input_row():
    inp = keras.Input((8,))
    hidden = layers.Dense(4)
    model = keras.Model(inp, layers.Dense(2)(hidden(inp)))
    hidden.trainable = False
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert " input_1 (InputLayer)        [(None, 8)]               0" in text
    assert "Total params: 46" in text
    assert "Trainable params: 10" in text
    assert "Non-trainable params: 36" in text


def test_summary_multi_input_has_connected_to_column():
    a, b = keras.Input((4,)), keras.Input((3,))
    model = keras.Model([a, b], layers.Dense(2)(layers.Concatenate()([a, b])))
    lines = []
    model.summary(print_fn=lines.append)
    assert "Connected to" in lines[2] and len(lines[1]) == 98
    assert any("['input_1[0][0]'," in line for line in lines)
    assert any(line.strip() == "'input_2[0][0]']" for line in lines)


def test_summary_before_build_is_an_error():
    with pytest.raises(ValueError, match="not yet been built"):
        keras.Sequential([layers.Dense(2)]).summary()


def test_compute_output_shape_by_probing():
    assert layers.Dense(7).compute_output_shape((None, 3)).as_tuple() == (None, 7)


def test_seed004_dense_gradient_names(capsys):
    layer = tf.keras.layers.Dense(2, activation="relu") if hasattr(tf, "keras") else \
        layers.Dense(2, activation="relu")
    if not hasattr(tf.nn, "relu"):
        pytest.skip("tf.nn.relu not available yet")
    x = tf.constant([[1.0, 2.0, 3.0]])
    with tf.GradientTape() as tape:
        y = layer(x)
        loss = tf.reduce_mean(y ** 2)
    grad = tape.gradient(loss, layer.trainable_variables)
    for var, g in zip(layer.trainable_variables, grad):
        print(f"{var.name}, shape: {g.shape}")
    assert capsys.readouterr().out == "dense/kernel:0, shape: (3, 2)\ndense/bias:0, shape: (2,)\n"
