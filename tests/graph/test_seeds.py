"""Seed snippets of the graph area (003: tf.function slides, 004: TF2 version of the program)."""

import subprocess
import sys
import textwrap

import numpy as np

import tapeflow as tf


def test_seed_004_tf2_program_output():
    program = textwrap.dedent("""
        import tapeflow as tf
        tf.compat.v1.enable_eager_execution()
        print(f'TF executing eagerly is {tf.executing_eagerly()}')
        W = tf.Variable(tf.ones(shape=(2,2)), name="W")
        b = tf.Variable(tf.zeros(shape=(2)), name="b")
        regularizer = tf.keras.regularizers.l2(0.04)
        @tf.function
        def forward(x):
          return regularizer(W) * x + b
        out_b = forward([0,1])
        out_a = forward([1,0])
        print(out_a)
        print(out_b)
        """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout
    assert out == ("TF executing eagerly is True\n"
                   "tf.Tensor([0.16 0.  ], shape=(2,), dtype=float32)\n"
                   "tf.Tensor([0.   0.16], shape=(2,), dtype=float32)\n")


def test_seed_003_function_is_polymorphic():
    @tf.function
    def add(a, b):
        return a + b

    np.testing.assert_array_equal(add(tf.ones([2, 2]), tf.ones([2, 2])).numpy(),
                                  [[2.0, 2.0], [2.0, 2.0]])
    assert add(tf.constant(1), tf.constant(2)).dtype == tf.int32
    assert float(add(tf.constant(1.5), tf.constant(2.0))) == 3.5


def test_seed_003_lstm_cell_function_matches_eager():
    keras = tf.keras
    lstm_cell = keras.layers.LSTMCell(10)

    @tf.function
    def fn(input, state):  # noqa: A002 (the seed's names)
        return lstm_cell(input, state)

    input = tf.random.uniform([10, 10])  # noqa: A001
    state = [tf.zeros([10, 10])] * 2
    eager_out, eager_state = lstm_cell(input, state)
    graph_out, graph_state = fn(input, state)
    np.testing.assert_allclose(graph_out.numpy(), eager_out.numpy(), rtol=1e-5, atol=1e-6)
    for g, e in zip(graph_state, eager_state):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    fn(input, state)
    assert fn.experimental_get_tracing_count() == 1
