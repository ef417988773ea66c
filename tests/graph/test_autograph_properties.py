"""AutoGraph keeps Python's semantics: converted + traced == the same code run eagerly."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tapeflow as tf


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
        if steps > 200:
            break
    return steps


def clipped_running_sum(x, limit):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total += v
        if total > limit:
            return total * 10.0
    return total


def nested(n, m):
    acc = 0
    for i in tf.range(n):
        j = 0
        while j < m:
            if (i + j) % 3 == 0:
                acc += i * j
            elif j > i:
                break
            j += 1
    return acc


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 60))
def test_while_if_break(n):
    graph = tf.function(collatz_steps)
    assert int(graph(tf.constant(n))) == int(collatz_steps(tf.constant(n)))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-5, 5, width=32), min_size=1, max_size=8), st.floats(0, 10))
def test_for_continue_return(values, limit):
    x = tf.constant(np.array(values, np.float32))
    lim = tf.constant(np.float32(limit))
    graph = tf.function(clipped_running_sum)
    np.testing.assert_allclose(float(graph(x, lim)), float(clipped_running_sum(x, lim)),
                               rtol=1e-6)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 6), st.integers(0, 6))
def test_nested_loops_elif_break(n, m):
    graph = tf.function(nested)
    assert int(graph(tf.constant(n), tf.constant(m))) == int(nested(tf.constant(n),
                                                                    tf.constant(m)))
