"""tf.test.assert_equal_graph_def (node sets in any order), tf.experimental.async_scope and
tf.test.experimental.sync_devices under synchronous execution."""

import pytest

import tapeflow as tf


def test_assert_equal_graph_def():
    f = tf.function(lambda x: tf.nn.relu(x) * 2.0)
    g = tf.function(lambda x: tf.nn.relu(x) * 3.0)
    spec = tf.TensorSpec([2], tf.float32)
    a = f.get_concrete_function(spec).graph
    b = tf.function(lambda x: tf.nn.relu(x) * 2.0).get_concrete_function(spec).graph
    from tapeflow.summary.graph_def import as_graph_def

    shuffled = as_graph_def(a)
    nodes = list(shuffled.node)[::-1]
    del shuffled.node[:]
    shuffled.node.extend(nodes)
    tf.test.assert_equal_graph_def(a, b)
    tf.test.assert_equal_graph_def(as_graph_def(a), shuffled)
    with pytest.raises(AssertionError, match="differ"):
        tf.test.assert_equal_graph_def(a, g.get_concrete_function(spec).graph)


def test_async_scope_and_sync_devices_run_ops_in_place():
    with tf.experimental.async_scope():
        y = tf.constant(2.0) * 3.0
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.add(tf.constant([1.0]), tf.constant([1, 2]))
    tf.experimental.async_clear_error()
    tf.test.experimental.sync_devices()
    assert y.numpy() == 6.0
