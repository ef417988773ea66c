"""keras.initializers and keras.regularizers: distributions, names, get(), seed 004."""

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import initializers, regularizers


def test_fans_for_dense_and_conv_kernels():
    assert initializers.compute_fans((3, 5)) == (3, 5)
    assert initializers.compute_fans((3, 3, 4, 8)) == (36, 72)
    assert initializers.compute_fans((7,)) == (7, 7)


@pytest.mark.parametrize("name,scale,fan,kind", [
    ("glorot_uniform", 1.0, "avg", "uniform"), ("glorot_normal", 1.0, "avg", "normal"),
    ("he_uniform", 2.0, "in", "uniform"), ("he_normal", 2.0, "in", "normal"),
    ("lecun_uniform", 1.0, "in", "uniform"), ("lecun_normal", 1.0, "in", "normal"),
])
def test_variance_scaling_family_has_keras_variance(name, scale, fan, kind):
    shape = (3, 3, 40, 60)
    fan_in, fan_out = 3 * 3 * 40, 3 * 3 * 60
    n = {"in": fan_in, "avg": (fan_in + fan_out) / 2}[fan]
    values = initializers.get(name)(shape).numpy()
    assert values.shape == shape and values.dtype == np.float32
    assert abs(values.var() / (scale / n) - 1) < 0.05
    if kind == "uniform":
        assert np.abs(values).max() <= math.sqrt(3 * scale / n)
    else:  # truncated at two (rescaled) standard deviations
        assert np.abs(values).max() <= 2 * math.sqrt(scale / n) / 0.87962566103423978


def test_seeded_initializers_repeat_and_global_seed_reproduces():
    a = initializers.GlorotUniform(seed=7)((4, 4)).numpy()
    np.testing.assert_array_equal(a, initializers.GlorotUniform(seed=7)((4, 4)).numpy())
    tf.random.set_seed(11)
    first = initializers.HeNormal()((5, 5)).numpy()
    tf.random.set_seed(11)
    np.testing.assert_array_equal(first, initializers.HeNormal()((5, 5)).numpy())


def test_simple_initializers_and_dtypes():
    np.testing.assert_array_equal(initializers.get("zeros")((2, 2)).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(initializers.Ones()((3,), dtype="float64").numpy(), np.ones(3))
    assert initializers.Ones()((3,), dtype="float64").dtype == tf.float64
    np.testing.assert_array_equal(initializers.Constant(2.5)((2,)).numpy(), [2.5, 2.5])
    normal = initializers.RandomNormal(mean=1.0, stddev=0.5, seed=1)((20000,)).numpy()
    assert abs(normal.mean() - 1.0) < 0.02 and abs(normal.std() - 0.5) < 0.02
    uniform = initializers.RandomUniform(-1.0, 3.0, seed=2)((20000,)).numpy()
    assert uniform.min() >= -1.0 and uniform.max() < 3.0 and abs(uniform.mean() - 1.0) < 0.05
    trunc = initializers.TruncatedNormal(stddev=1.0, seed=3)((20000,)).numpy()
    assert np.abs(trunc).max() <= 2.0
    np.testing.assert_array_equal(initializers.Identity(3.0)((2, 3)).numpy(),
                                  3.0 * np.eye(2, 3))


@pytest.mark.parametrize("shape", [(6, 6), (4, 9), (9, 4), (2, 3, 5)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    q = initializers.Orthogonal(gain=2.0, seed=5)(shape).numpy().reshape(-1, shape[-1])
    small = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(small, 4.0 * np.eye(small.shape[0]), atol=1e-5)


def test_initializer_get_serialize_and_errors():
    init = initializers.get("he_normal")
    assert isinstance(init, initializers.HeNormal)
    assert initializers.get(init) is init
    again = initializers.deserialize(initializers.serialize(initializers.VarianceScaling(
        2.0, "fan_out", "uniform", seed=3)))
    assert (again.scale, again.mode, again.distribution, again.seed) == (2.0, "fan_out",
                                                                         "uniform", 3)
    assert initializers.get(None) is None
    with pytest.raises(ValueError, match="Unknown initializer"):
        initializers.get("glorot")
    with pytest.raises(ValueError, match="mode"):
        initializers.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="floating"):
        initializers.GlorotUniform()((2, 2), dtype="int32")
    with pytest.raises(ValueError, match="rank >= 2"):
        initializers.Orthogonal()((3,))


def test_seed_004_l2_regularizer_in_tf_function():
    W = tf.Variable(tf.ones(shape=(2, 2)), name="W")
    b = tf.Variable(tf.zeros(shape=(2)), name="b")
    regularizer = tf.keras.regularizers.l2(0.04)

    @tf.function
    def forward(x):
        return regularizer(W) * x + b

    np.testing.assert_allclose(forward([1.0, 0.0]).numpy(), [0.16, 0.0], rtol=1e-6)
    np.testing.assert_allclose(forward([0.0, 1.0]).numpy(), [0.0, 0.16], rtol=1e-6)


def test_regularizer_values_and_gradients():
    w = tf.Variable(np.array([[1.0, -2.0], [3.0, 0.5]]))
    assert float(regularizers.L1(0.1)(w)) == pytest.approx(0.65)
    assert float(regularizers.L2(0.5)(w)) == pytest.approx(0.5 * 14.25)
    assert float(regularizers.L1L2(l1=0.1, l2=0.5)(w)) == pytest.approx(0.65 + 7.125)
    assert float(regularizers.l1_l2()(w)) == pytest.approx(0.01 * 6.5 + 0.01 * 14.25)
    with tf.GradientTape() as tape:
        loss = regularizers.L2(0.5)(w)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), w.numpy())


def test_regularizer_get_and_errors():
    assert isinstance(regularizers.get("l2"), regularizers.L2)
    reg = regularizers.L1(0.2)
    assert regularizers.get(reg) is reg
    assert regularizers.deserialize(regularizers.serialize(reg)).l1 == 0.2
    with pytest.raises(ValueError, match="Unknown regularizer"):
        regularizers.get("l3")
    with pytest.raises(ValueError, match="non-negative"):
        regularizers.L2(-1.0)
