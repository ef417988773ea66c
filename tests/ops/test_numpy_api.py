"""tf.experimental.numpy: NumPy's functions and promotion on tapeflow tensors."""

import numpy as np
import pytest

import tapeflow as tf

tnp = tf.experimental.numpy


def test_functions_match_numpy():
    a = np.arange(6.0).reshape(2, 3)
    b = np.array([1.0, 2.0, 3.0])
    for name in ["add", "multiply", "maximum", "subtract", "divide", "power", "arctan2"]:
        np.testing.assert_allclose(getattr(tnp, name)(a, b).numpy(), getattr(np, name)(a, b))
    for name in ["sqrt", "exp", "log1p", "sin", "tanh", "abs", "square", "cbrt", "log2"]:
        np.testing.assert_allclose(getattr(tnp, name)(a).numpy(), getattr(np, name)(a),
                                   rtol=1e-6)
    for name in ["sum", "mean", "max", "min", "prod", "std", "var"]:
        np.testing.assert_allclose(getattr(tnp, name)(a, axis=1).numpy(),
                                   getattr(np, name)(a, axis=1), rtol=1e-6)
    np.testing.assert_allclose(tnp.matmul(a, a.T).numpy(), a @ a.T)
    np.testing.assert_allclose(tnp.dot(a, b).numpy(), a.dot(b))
    np.testing.assert_allclose(tnp.outer(b, b).numpy(), np.outer(b, b))
    np.testing.assert_allclose(tnp.concatenate([a, a], axis=1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_allclose(tnp.moveaxis(a, 0, 1).numpy(), np.moveaxis(a, 0, 1))
    np.testing.assert_allclose(tnp.clip(a, 1, 4).numpy(), np.clip(a, 1, 4))
    np.testing.assert_allclose(tnp.cumsum(a).numpy(), np.cumsum(a))
    np.testing.assert_array_equal(tnp.argsort(b[::-1]).numpy(), np.argsort(b[::-1]))
    np.testing.assert_allclose(tnp.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    assert bool(tnp.allclose(a, a + 1e-9))


def test_numpy_promotion_rules():
    assert tnp.asarray([1.5]).dtype == tf.float64  # NumPy's default float
    assert tnp.add(tnp.asarray([1], tnp.int32), 2.5).dtype == tf.float64
    assert tnp.add(tf.constant([1.0]), 2.5).dtype == tf.float32  # weak Python scalar
    assert tnp.add(tf.constant([1], tf.int8), tf.constant([1], tf.int16)).dtype == tf.int16
    assert tnp.arange(5).dtype == tf.int64 and tnp.zeros(3).dtype == tf.float64
    assert tnp.result_type(np.int32, np.float32) == tf.float64


@pytest.fixture
def numpy_behavior():
    from tapeflow.ops import numpy_api

    tnp.experimental_enable_numpy_behavior()
    yield
    for name in numpy_api._settings.pop("methods"):  # other tests see plain tensors again
        delattr(tf.Tensor, name)


def test_numpy_behavior_methods_and_interop(numpy_behavior):
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert t.T.numpy().tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert t.reshape(4).shape == (4,) and t.reshape(1, 4).shape == (1, 4)
    assert t.astype(tf.int32).dtype == tf.int32
    assert float(t.sum()) == 10.0 and t.ravel().shape == (4,)
    assert np.asarray(t).sum() == 10.0
    f = tf.function(lambda x: tnp.sum(tnp.square(x), axis=0))
    np.testing.assert_allclose(f(t).numpy(), [10.0, 20.0])
