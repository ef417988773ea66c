"""tf.random.stateless_* and tf.random.Generator reproduce TensorFlow 2.21's numbers (fixture
recorded by record_tf_random.py), eagerly and traced."""

import json
import pathlib

import numpy as np
import pytest
import random_traced_cases

import tapeflow as tf

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "tf_random.json").read_text())
SEED = [1, 2]

STATELESS = {
    "uniform_f32": lambda: tf.random.stateless_uniform([10], SEED),
    "uniform_f64": lambda: tf.random.stateless_uniform([5], SEED, dtype=tf.float64),
    "uniform_range": lambda: tf.random.stateless_uniform([5], SEED, minval=-3.0, maxval=2.0),
    "uniform_int32": lambda: tf.random.stateless_uniform([7], SEED, 0, 10, dtype=tf.int32),
    "uniform_int64": lambda: tf.random.stateless_uniform([5], SEED, -5, 100, dtype=tf.int64),
    "full_int32": lambda: tf.random.stateless_uniform([4], SEED, None, None, dtype=tf.int32),
    "normal_f32": lambda: tf.random.stateless_normal([2, 5], SEED),
    "normal_f64": lambda: tf.random.stateless_normal([5], SEED, dtype=tf.float64),
    "normal_scaled": lambda: tf.random.stateless_normal([4], [7, 9], mean=3.0, stddev=0.5),
    "truncated_f32": lambda: tf.random.stateless_truncated_normal([9], SEED),
    "truncated_f64": lambda: tf.random.stateless_truncated_normal([5], SEED, dtype=tf.float64),
    "split": lambda: tf.random.experimental.stateless_split(SEED, 3),
    "fold_in": lambda: tf.random.experimental.stateless_fold_in(SEED, 7),
}


@pytest.mark.parametrize("name", sorted(STATELESS))
def test_stateless_matches_tensorflow(name):
    want = np.asarray(FIXTURE["stateless"][name])
    got = STATELESS[name]().numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want.astype(got.dtype))  # bit for bit
    traced = tf.function(STATELESS[name])().numpy()
    np.testing.assert_array_equal(traced, got)


def test_generator_sequence_matches_tensorflow():
    want = FIXTURE["generator"]
    g = tf.random.Generator.from_seed(5)
    np.testing.assert_array_equal(g.normal([5]).numpy(), np.float32(want["normal"]))
    np.testing.assert_array_equal(g.uniform([3]).numpy(), np.float32(want["uniform"]))
    np.testing.assert_array_equal(g.truncated_normal([6]).numpy(), np.float32(want["truncated"]))
    assert g.uniform([4], 0, 10, dtype=tf.int32).numpy().tolist() == want["ints"]
    np.testing.assert_array_equal(g.uniform([2], dtype=tf.float64).numpy(), want["uniform_f64"])
    assert g.state.numpy().tolist() == want["state"]
    assert g.make_seeds(2).numpy().tolist() == want["make_seeds"]
    child = g.split(2)[1]
    assert child.state.numpy().tolist() == want["split_child_state"]
    np.testing.assert_array_equal(child.normal([3]).numpy(), np.float32(want["split_child_normal"]))
    assert g.state.numpy().tolist() == want["after_split_state"]


def test_generator_in_function_advances_each_call():
    g = tf.random.Generator.from_seed(5)
    f = tf.function(lambda: g.normal([5]))
    np.testing.assert_array_equal(f().numpy(), np.float32(FIXTURE["generator"]["normal"]))
    second = f().numpy()
    assert not np.array_equal(second, FIXTURE["generator"]["normal"])
    eager = tf.random.Generator.from_seed(5)
    eager.normal([5])
    np.testing.assert_array_equal(eager.normal([5]).numpy(), second)


def test_other_distributions_are_reproducible_and_plausible():
    a = tf.random.stateless_binomial([2000], SEED, 10, 0.3).numpy()
    assert np.array_equal(a, tf.random.stateless_binomial([2000], SEED, 10, 0.3).numpy())
    assert abs(a.mean() - 3.0) < 0.2
    p = tf.random.stateless_poisson([2000], SEED, 4.0).numpy()
    assert abs(p.mean() - 4.0) < 0.3
    c = tf.random.stateless_categorical(tf.math.log([[0.1, 0.9]]), 2000, SEED).numpy()
    assert c.shape == (1, 2000) and abs(c.mean() - 0.9) < 0.05
    gam = tf.random.stateless_gamma([2000], SEED, alpha=2.0).numpy()
    assert abs(gam.mean() - 2.0) < 0.2


def test_global_generator_and_bad_seeds():
    g = tf.random.Generator.from_seed(3)
    tf.random.set_global_generator(g)
    assert tf.random.get_global_generator() is g
    with pytest.raises(ValueError, match="shape \\[2\\]"):
        tf.random.stateless_normal([2], seed=[1, 2, 3])


def test_seeded_eager_stateful_ops_match_tensorflow():
    want = FIXTURE["stateful"]
    tf.random.set_seed(5)
    got = {"uniform_1": tf.random.uniform([3]), "uniform_2": tf.random.uniform([3]),
           "normal_seed7_1": tf.random.normal([2], seed=7),
           "normal_seed7_2": tf.random.normal([2], seed=7)}
    tf.random.set_seed(5)
    got["normal_scaled"] = tf.random.normal([3], mean=1.0, stddev=2.0)
    got["truncated"] = tf.random.truncated_normal([3])
    got["ints"] = tf.random.uniform([3], 0, 10, dtype=tf.int32)
    got["uniform_range"] = tf.random.uniform([3], -2.0, 3.0)
    tf.random.set_seed(None)
    got["op_seed_only"] = tf.random.uniform([2], seed=3)
    for name, value in got.items():
        # normals: Box-Muller's float32 log/sin/cos may differ from glibc's by one ulp
        np.testing.assert_allclose(value.numpy(), want[name], rtol=3e-7, err_msg=name)


def test_seeded_stateful_ops_in_tf_function_match_tensorflow():
    want = FIXTURE["traced"]
    got = random_traced_cases.traced(tf)
    assert sorted(got) == sorted(want)
    for name, value in got.items():
        np.testing.assert_allclose(value.numpy(), want[name], rtol=3e-7, err_msg=name)
