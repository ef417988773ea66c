"""tf.compat.v1.train Momentum/Adagrad/RMSProp optimizers: three steps on sum(v**3) match
values recorded from TensorFlow 2.21 (the same script with `import tensorflow as tf`)."""

import numpy as np
import pytest

import tapeflow as tf

RECORDED = {  # TF 2.21, float32
    "momentum": [-0.11632663011550903, -27.304370880126953],
    "nesterov": [-0.18581968545913696, -161.4023895263672],
    "adagrad": [0.7900323867797852, -2.236192226409912],
    "rmsprop": [0.917579174041748, -2.1077640056610107],
    "rmsprop_c": [0.9395011067390442, -2.080447196960449],
}
MAKERS = {
    "momentum": lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adagrad": lambda: tf.compat.v1.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.01, momentum=0.5),
    "rmsprop_c": lambda: tf.compat.v1.train.RMSPropOptimizer(0.01, centered=True),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_matches_tensorflow(name):
    v = tf.Variable([1.0, -2.0])
    opt = MAKERS[name]()
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * v * v)
        opt.apply_gradients([(tape.gradient(loss, v), v)])
    np.testing.assert_allclose(v.numpy(), RECORDED[name], rtol=1e-6)


def test_momentum_in_a_traced_step():
    v = tf.Variable([1.0, -2.0])
    opt = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * v * v)
        opt.apply_gradients([(tape.gradient(loss, v), v)])

    for _ in range(3):
        step()
    np.testing.assert_allclose(v.numpy(), RECORDED["momentum"], rtol=1e-6)
