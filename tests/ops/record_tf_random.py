"""Records TensorFlow 2.21's random numbers for test_random_philox.py.

    /work/tfenv/bin/python tests/ops/record_tf_random.py > tests/ops/fixtures/tf_random.json
"""

import json
import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_traced_cases  # noqa: E402

SEED = [1, 2]


def stateless():
    return {
        "uniform_f32": tf.random.stateless_uniform([10], SEED),
        "uniform_f64": tf.random.stateless_uniform([5], SEED, dtype=tf.float64),
        "uniform_range": tf.random.stateless_uniform([5], SEED, minval=-3.0, maxval=2.0),
        "uniform_int32": tf.random.stateless_uniform([7], SEED, 0, 10, dtype=tf.int32),
        "uniform_int64": tf.random.stateless_uniform([5], SEED, -5, 100, dtype=tf.int64),
        "full_int32": tf.random.stateless_uniform([4], SEED, None, None, dtype=tf.int32),
        "normal_f32": tf.random.stateless_normal([2, 5], SEED),
        "normal_f64": tf.random.stateless_normal([5], SEED, dtype=tf.float64),
        "normal_scaled": tf.random.stateless_normal([4], [7, 9], mean=3.0, stddev=0.5),
        "truncated_f32": tf.random.stateless_truncated_normal([9], SEED),
        "truncated_f64": tf.random.stateless_truncated_normal([5], SEED, dtype=tf.float64),
        "split": tf.random.experimental.stateless_split(SEED, 3),
        "fold_in": tf.random.experimental.stateless_fold_in(SEED, 7),
    }


def generator():
    g = tf.random.Generator.from_seed(5)
    out = {"normal": g.normal([5]), "uniform": g.uniform([3]),
           "truncated": g.truncated_normal([6]), "ints": g.uniform([4], 0, 10, dtype=tf.int32),
           "uniform_f64": g.uniform([2], dtype=tf.float64), "state": tf.identity(g.state),
           "make_seeds": g.make_seeds(2)}
    child = g.split(2)[1]
    out["split_child_state"] = tf.identity(child.state)
    out["split_child_normal"] = child.normal([3])
    out["after_split_state"] = g.state
    return out


def stateful():
    """Eager stateful ops after set_seed (implicit and repeated explicit op seeds)."""
    tf.random.set_seed(5)
    out = {"uniform_1": tf.random.uniform([3]), "uniform_2": tf.random.uniform([3]),
           "normal_seed7_1": tf.random.normal([2], seed=7),
           "normal_seed7_2": tf.random.normal([2], seed=7)}
    tf.random.set_seed(5)
    out["normal_scaled"] = tf.random.normal([3], mean=1.0, stddev=2.0)
    out["truncated"] = tf.random.truncated_normal([3])
    out["ints"] = tf.random.uniform([3], 0, 10, dtype=tf.int32)
    out["uniform_range"] = tf.random.uniform([3], -2.0, 3.0)
    tf.random.set_seed(None)
    out["op_seed_only"] = tf.random.uniform([2], seed=3)
    return out


def as_lists(d):
    return {k: v.numpy().tolist() for k, v in d.items()}


print(json.dumps({"stateless": as_lists(stateless()), "generator": as_lists(generator()),
                  "stateful": as_lists(stateful()),
                  "traced": as_lists(random_traced_cases.traced(tf))}, indent=1))
