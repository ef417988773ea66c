"""A layer instance added to a Sequential more than once is applied each time with one set of
weights, as in Keras 2 (numbers checked against tf-keras 2.21)."""

import numpy as np
import pytest

import tapeflow as tf


def test_the_same_layer_twice_shares_its_weights():
    dense = tf.keras.layers.Dense(4, activation="relu", kernel_initializer="ones")
    model = tf.keras.Sequential([tf.keras.Input((4,)), dense, dense])
    np.testing.assert_array_equal(model(np.ones((2, 4), np.float32)).numpy(),
                                  np.full((2, 4), 16.0))   # tf-keras: [16, 16, 16, 16]
    assert model.layers == [dense]
    assert len(model.trainable_weights) == 2 and model.count_params() == 20
    x = np.random.RandomState(0).rand(16, 4).astype(np.float32)
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    before = dense.kernel.numpy().copy()
    model.fit(x, x, epochs=1, verbose=0)
    assert not np.array_equal(before, dense.kernel.numpy())


def test_distinct_layers_with_one_name_are_still_refused():
    with pytest.raises(ValueError, match="unique names"):
        tf.keras.Sequential([tf.keras.layers.Dense(2, name="d"),
                             tf.keras.layers.Dense(2, name="d")])
