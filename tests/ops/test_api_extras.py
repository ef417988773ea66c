"""tf.train.ExponentialMovingAverage (vs TensorFlow 2.21's recorded shadows), tf.errors codes,
tf.autograph helpers."""

import numpy as np

import tapeflow as tf


def test_exponential_moving_average_matches_tensorflow():
    v = tf.Variable([1.0, 2.0])
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([v])
    for value in ([2.0, 0.0], [4.0, 1.0]):
        v.assign(value)
        ema.apply([v])
    # recorded from TF 2.21: shadow starts at the variable, shadow -= 0.1 * (shadow - v)
    np.testing.assert_allclose(ema.average(v).numpy(), [1.3900001049041748, 1.71999990940094],
                               rtol=1e-6)

    step = tf.Variable(0.0)
    w = tf.Variable(0.0)
    ema2 = tf.train.ExponentialMovingAverage(0.99, num_updates=step)

    @tf.function
    def update():
        w.assign_add(1.0)
        step.assign_add(1.0)
        ema2.apply([w])

    update()
    update()
    # decay = min(0.99, (1 + n) / (10 + n)): 2/11 then 3/12
    want = 0.0
    for n, value in ((1.0, 1.0), (2.0, 2.0)):
        d = min(0.99, (1 + n) / (10 + n))
        want -= (1 - d) * (want - value)
    np.testing.assert_allclose(ema2.average(w).numpy(), want, rtol=1e-6)


def test_error_codes_and_autograph():
    assert tf.errors.OK == 0 and tf.errors.INVALID_ARGUMENT == 3 and tf.errors.UNAUTHENTICATED == 16
    assert issubclass(tf.errors.UnauthenticatedError, tf.errors.OpError)
    tf.autograph.set_verbosity(0)

    def f(x):
        if x > 0:
            return x
        return -x

    g = tf.function(tf.autograph.to_graph(f))
    assert float(g(tf.constant(-3.0))) == 3.0
