"""Optimizers update 0-d weights (a learned scale) exactly as 1-element ones."""

import numpy as np
import pytest

import tapeflow as tf

OPTIMIZERS = [
    lambda: tf.keras.optimizers.SGD(0.1),
    lambda: tf.keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    lambda: tf.keras.optimizers.Adam(0.1, amsgrad=True),
    lambda: tf.keras.optimizers.Adagrad(0.1),
    lambda: tf.keras.optimizers.RMSprop(0.1, momentum=0.5, centered=True),
]


@pytest.mark.parametrize("make", OPTIMIZERS)
@pytest.mark.parametrize("traced", [False, True])
def test_scalar_weights_update_like_one_element_weights(make, traced):
    scalar, vector = tf.Variable(2.0), tf.Variable([2.0])
    opt = make()

    def step(g):
        opt.apply_gradients([(tf.constant(g, tf.float32), scalar),
                             (tf.constant([g], tf.float32), vector)])

    run = tf.function(step) if traced else step
    for g in (1.0, -0.5, 2.0):
        run(g)
    assert scalar.shape == () and scalar.numpy().shape == ()
    np.testing.assert_array_equal(scalar.numpy(), vector.numpy()[0])
    assert scalar.numpy() != 2.0
