"""Every layer gives the same outputs and gradients eagerly and inside tf.function."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, layers

rng = np.random.default_rng(0)


def _img(shape=(2, 6, 6, 3)):
    return rng.standard_normal(shape).astype(np.float32)


# (id, layer factory, input factory, call kwargs)
CASES = [
    ("dense", lambda: layers.Dense(4, activation="relu"), lambda: _img((3, 5)), {}),
    ("dense_rank3", lambda: layers.Dense(4), lambda: _img((2, 3, 5)), {}),
    ("conv_same_stride2", lambda: layers.Conv2D(4, 3, strides=2, padding="same"), _img, {}),
    ("conv_dilated", lambda: layers.Conv2D(2, 3, dilation_rate=2, activation="tanh"), _img, {}),
    ("max_pool", lambda: layers.MaxPooling2D(), _img, {}),
    ("avg_pool_same", lambda: layers.AveragePooling2D(3, 2, padding="same"), _img, {}),
    ("global_avg", lambda: layers.GlobalAveragePooling2D(), _img, {}),
    ("global_max", lambda: layers.GlobalMaxPooling2D(), _img, {}),
    ("flatten", lambda: layers.Flatten(), _img, {}),
    ("reshape", lambda: layers.Reshape((-1, 9)), _img, {}),
    ("batch_norm_train", lambda: layers.BatchNormalization(), _img, {"training": True}),
    ("batch_norm_infer", lambda: layers.BatchNormalization(), _img, {"training": False}),
    ("batch_norm_axis1", lambda: layers.BatchNormalization(axis=1), _img,
     {"training": True}),
    ("layer_norm", lambda: layers.LayerNormalization(), _img, {}),
    ("lstm_seq", lambda: layers.LSTM(3, return_sequences=True), lambda: _img((2, 4, 3)), {}),
    ("simple_rnn", lambda: layers.SimpleRNN(3), lambda: _img((2, 4, 3)), {}),
    ("relu_capped", lambda: layers.ReLU(max_value=0.5, negative_slope=0.1), _img, {}),
    ("softmax", lambda: layers.Softmax(), lambda: _img((3, 5)), {}),
    ("activation_gelu", lambda: layers.Activation("gelu"), _img, {}),
    ("lambda", lambda: layers.Lambda(lambda t: t * t), _img, {}),
]


@pytest.mark.parametrize("make_layer,make_input,kwargs", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_layer_eager_and_graph_agree(make_layer, make_input, kwargs):
    backend.clear_session()
    layer = make_layer()
    x = tf.constant(make_input())

    def run(inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            out = layer(inputs, **kwargs)
            loss = tf.reduce_sum(out * out)
        return out, tape.gradient(loss, [inputs] + layer.trainable_variables)

    eager_out, eager_grads = run(x)
    graph_out, graph_grads = tf.function(run)(x)
    np.testing.assert_allclose(graph_out.numpy(), eager_out.numpy(), rtol=1e-5, atol=1e-6)
    for g, e in zip(graph_grads, eager_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)


def test_merge_layers_eager_and_graph_agree():
    a, b = tf.constant(_img()), tf.constant(_img())
    for layer in (layers.Concatenate(), layers.Add(), layers.Multiply(), layers.Average()):
        eager = layer([a, b])
        graph = tf.function(lambda x, y, m=layer: m([x, y]))(a, b)
        np.testing.assert_allclose(graph.numpy(), eager.numpy(), rtol=1e-6)


def test_embedding_eager_and_graph_agree():
    emb = layers.Embedding(10, 4)
    ids = tf.constant(np.array([[1, 2], [9, 0]]))
    np.testing.assert_array_equal(tf.function(emb)(ids).numpy(), emb(ids).numpy())


def test_dropout_in_graph_zeroes_and_scales_in_training_only():
    drop = layers.Dropout(0.5)
    x = tf.ones((50, 50))
    train = tf.function(lambda t: drop(t, training=True))(x).numpy()
    assert set(np.unique(train)) == {0.0, 2.0}
    np.testing.assert_array_equal(tf.function(lambda t: drop(t, training=False))(x).numpy(),
                                  x.numpy())
