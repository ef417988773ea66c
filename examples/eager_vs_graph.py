"""Seed 004: the same subclassed model run eagerly and as a graph (``tf.function``); seed 003's
LSTMCell step timed the same way.

    python examples/eager_vs_graph.py
"""

import timeit

import tapeflow as tf
from tapeflow.models import MLP

input_data = tf.random.uniform([60, 28, 28])
eager_model = MLP(input_shape=(28, 28))
graph_model = tf.function(eager_model)
eager_model(input_data)
graph_model(input_data)
print("Eager time:", timeit.timeit(lambda: eager_model(input_data), number=100))
print("Graph time:", timeit.timeit(lambda: graph_model(input_data), number=100))

lstm_cell = tf.keras.layers.LSTMCell(10)


@tf.function
def fn(input, state):
    return lstm_cell(input, state)


input = tf.zeros([10, 10])
state = [tf.zeros([10, 10])] * 2
lstm_cell(input, state)
fn(input, state)
print("LSTMCell eager:", timeit.timeit(lambda: lstm_cell(input, state), number=10))
print("LSTMCell graph:", timeit.timeit(lambda: fn(input, state), number=10))
