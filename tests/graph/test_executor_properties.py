"""Property test: random elementwise/matmul programs give the same values traced and eager.

Guards the executor's buffer reuse (``out=`` into dying inputs) and value freeing: a value may
be overwritten only when nothing else can still read it.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tapeflow as tf

UNARY = [tf.tanh, tf.exp, tf.nn.relu, tf.sigmoid, lambda x: -x, tf.square,
         lambda x: tf.reshape(x, [4, 3])[:, :],  lambda x: tf.transpose(tf.transpose(x))]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b,
          lambda a, b: tf.maximum(a, b), lambda a, b: a / (tf.abs(b) + 1.0)]

program = st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, 100),
                             st.integers(0, 100)), min_size=1, max_size=12)


def run(steps, x, y):
    values = [x, y]
    for binary, k, i, j in steps:
        a, b = values[i % len(values)], values[j % len(values)]
        values.append(BINARY[k % len(BINARY)](a, b) if binary else UNARY[k](a))
    return values[-1], values[len(values) // 2]


@settings(max_examples=40, deadline=None)
@given(program)
def test_random_programs_traced_equal_eager(steps):
    rng = np.random.default_rng(len(steps))
    x_np = rng.normal(size=(4, 3)).astype(np.float32)
    y_np = rng.normal(size=(4, 3)).astype(np.float32)
    x, y = tf.constant(x_np.copy()), tf.constant(y_np.copy())
    eager = run(steps, x, y)
    traced = tf.function(lambda a, b: run(steps, a, b))(x, y)
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x.numpy(), x_np)  # inputs are never written into
    np.testing.assert_array_equal(y.numpy(), y_np)
