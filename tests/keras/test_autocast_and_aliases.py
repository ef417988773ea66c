"""Keras 2's input casting (autocast) and TensorFlow 2's module aliases (issue 24, items 2-3)."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


# (layer, input dtype, output dtype) recorded with TensorFlow 2.21 + tf-keras 2.21: Dense and the
# normalizations cast integer inputs; autocast casts floating inputs; other layers keep ints.
CASES = [
    (lambda: layers.Dense(2), "int64", "float32"),
    (lambda: layers.Dense(2), "float64", "float32"),
    (lambda: layers.Dense(2, dtype="float64"), "float32", "float64"),
    (lambda: layers.LayerNormalization(), "int64", "float32"),
    (lambda: layers.BatchNormalization(), "int32", "float32"),
    (lambda: layers.Activation("relu"), "int64", "int64"),
    (lambda: layers.Flatten(), "int64", "int64"),
    (lambda: layers.Dropout(0.5), "int64", "int64"),
    (lambda: layers.Layer(), "int64", "int64"),
    (lambda: layers.Embedding(20, 2), "int64", "float32"),
]


@pytest.mark.parametrize("make,in_dtype,out_dtype", CASES)
def test_layer_input_casting_matches_keras(make, in_dtype, out_dtype):
    x = tf.constant(np.arange(12).reshape(3, 4).astype(in_dtype))
    assert make()(x).dtype.name == out_dtype


def test_subclassed_model_dense_on_int64_inputs_matches_float_inputs():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2, kernel_initializer="ones")

        def call(self, x):
            return self.dense(x)

    net = Net()
    ints = np.arange(6, dtype=np.int64).reshape(3, 2)
    out = net(tf.constant(ints))
    assert out.dtype.name == "float32"
    np.testing.assert_array_equal(out.numpy(), net(ints.astype(np.float32)).numpy())
    net.compile("sgd", "mse", run_eagerly=False)
    net.fit(ints, np.zeros((3, 2), np.float32), verbose=0)  # traced with int64 inputs


def test_embedding_keeps_integer_ids_exact():
    emb = layers.Embedding(2**20, 1, embeddings_initializer="zeros")
    big = np.array([[2**20 - 1]], np.int64)
    emb(big)
    emb.embeddings.assign(np.arange(2**20, dtype=np.float32)[:, None])
    assert emb(big).numpy()[0, 0, 0] == 2**20 - 1  # not rounded through float32 ids


@pytest.mark.parametrize("alias", ["optimizers", "initializers", "losses", "metrics"])
def test_tf2_aliases_are_the_keras_modules_themselves(alias):
    assert getattr(tf, alias) is getattr(tf.keras, alias)


def test_alias_classes_work_through_the_alias():
    opt = tf.optimizers.SGD(0.5)
    v = tf.Variable([1.0])
    opt.apply_gradients([(tf.constant([2.0]), v)])
    assert v.numpy()[0] == 0.0
    init = tf.initializers.Constant(3.0)
    assert init((2,)).numpy().tolist() == [3.0, 3.0]
    assert tf.losses.MeanSquaredError()([1.0], [3.0]).numpy() == 4.0
    m = tf.metrics.Mean()
    m.update_state([1.0, 3.0])
    assert m.result().numpy() == 2.0


def test_keras_utils_helpers():
    utils = tf.keras.utils
    assert utils.to_categorical([1, 0], 3).tolist() == [[0, 1, 0], [1, 0, 0]]
    x, y, sw = utils.unpack_x_y_sample_weight(utils.pack_x_y_sample_weight([1, 2]))
    assert x == [1, 2] and y is None and sw is None
    assert utils.pack_x_y_sample_weight(1, 2, 3) == (1, 2, 3)
    assert utils.is_keras_tensor(keras.Input((2,))) and not utils.is_keras_tensor(np.ones(2))
    utils.set_random_seed(5)
    a = (np.random.rand(), tf.random.uniform([2]).numpy())
    utils.set_random_seed(5)
    b = (np.random.rand(), tf.random.uniform([2]).numpy())
    assert a[0] == b[0] and np.array_equal(a[1], b[1])
    with pytest.raises(ValueError, match="integer"):
        utils.set_random_seed(1.5)
