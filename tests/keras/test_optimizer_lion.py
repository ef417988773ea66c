"""tf.keras.optimizers.Lion: five steps on 0.5 * sum(A x^2) + sum(B x) give tf-keras 2.21's
float32 values (recorded with the same loop as reference/make_optimizer_values.py), its
formula in float64, and the same numbers in a traced step. Sparse gradients:
test_sparse_gradients.py (the Lion cases)."""

import numpy as np
import pytest
from optimizer_cases import X0, A, B

import tapeflow as tf

TF_VALUES = {  # tf_keras.optimizers.Lion(**kwargs), TF 2.21
    (0.1, 0.9, 0.99): [[1.4901161193847656e-08, -0.49999991059303284, 2.499999523162842],
                       [0.9999998807907104, -0.25, -1.2500001192092896]],
    (0.05, 0.5, 0.9): [[0.24999995529651642, -0.7499999403953552, 2.249999761581421],
                       [1.250000238418579, 7.450580596923828e-09, -1.0]],
}


def _run(opt, dtype, traced=False):
    x = tf.Variable(X0.astype(dtype))
    a, b = tf.constant(A.astype(dtype)), tf.constant(B.astype(dtype))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(a * x * x) * tf.constant(dtype(0.5)) + tf.reduce_sum(b * x)
        opt.apply_gradients([(tape.gradient(loss, x), x)])

    step = tf.function(step) if traced else step
    for _ in range(5):
        step()
    return x.numpy()


def _formula(lr, b1, b2):
    x, m = X0.astype(np.float64), np.zeros(X0.shape)
    for _ in range(5):
        g = A * x + B
        x = x - lr * np.sign(b1 * m + (1 - b1) * g)
        m = b2 * m + (1 - b2) * g
    return x


@pytest.mark.parametrize("hyper", sorted(TF_VALUES))
def test_lion_matches_tf_keras_and_its_formula(hyper):
    lr, b1, b2 = hyper
    make = lambda: tf.keras.optimizers.Lion(learning_rate=lr, beta_1=b1, beta_2=b2)  # noqa: E731
    np.testing.assert_allclose(_run(make(), np.float32), TF_VALUES[hyper], rtol=0, atol=1e-6)
    # the learning rate is a float32 tensor (as in Keras): 1e-8 from 0.05 in float32
    np.testing.assert_allclose(_run(make(), np.float64), _formula(lr, b1, b2), atol=1e-7)
    np.testing.assert_allclose(_run(make(), np.float32, traced=True), TF_VALUES[hyper],
                               rtol=0, atol=1e-6)


def test_lion_by_name_and_config():
    opt = tf.keras.optimizers.get("lion")
    assert isinstance(opt, tf.keras.optimizers.Lion) and opt.get_config()["beta_2"] == 0.99
    with pytest.raises(ValueError, match="beta_1"):
        tf.keras.optimizers.Lion(beta_1=0.0)
