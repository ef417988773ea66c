"""SpectralNormalization: the power iteration written in NumPy, tf-keras 2.21's recorded
values, eager vs tf.function, configs, and training through fit."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, layers

X = np.arange(8, dtype=np.float64).reshape(2, 4)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _normalized(kernel, u, iterations):
    w = kernel.reshape(-1, kernel.shape[-1])
    v = u
    for _ in range(iterations):
        v = u @ w.T
        v = v / np.linalg.norm(v)
        u = v @ w
        u = u / np.linalg.norm(u)
    sigma = (v @ w @ u.T).item()
    return (w / sigma).reshape(kernel.shape), u


def _wrapped(iterations=2, dtype="float64"):
    sn = layers.SpectralNormalization(layers.Dense(3, dtype=dtype), power_iterations=iterations,
                                      dtype=dtype)
    sn(X.astype(dtype))
    sn.vector_u.assign(np.array([[0.1, -0.2, 0.3]], dtype))
    sn.layer.kernel.assign((np.arange(12).reshape(4, 3) / 10).astype(dtype))
    return sn


@pytest.mark.parametrize("iterations", [1, 2, 5])
def test_training_call_normalizes_kernel_by_power_iteration(iterations):
    sn = _wrapped(iterations)
    kernel0 = sn.layer.kernel.numpy().copy()
    want_kernel, want_u = _normalized(kernel0, np.array([[0.1, -0.2, 0.3]]), iterations)
    y = sn(X, training=True)
    np.testing.assert_allclose(sn.layer.kernel.numpy(), want_kernel, rtol=1e-12)
    np.testing.assert_allclose(sn.vector_u.numpy(), want_u, rtol=1e-12)
    np.testing.assert_allclose(y.numpy(), X @ want_kernel + sn.layer.bias.numpy(), rtol=1e-12)
    untouched = sn.layer.kernel.numpy().copy()
    sn(X)  # training defaults to False: no update
    np.testing.assert_array_equal(sn.layer.kernel.numpy(), untouched)


def test_recorded_tf_keras_values_and_traced_update():
    sn = _wrapped(2, dtype="float32")
    y = sn(X.astype(np.float32), training=True)
    # recorded from tf_keras 2.21 (TF_USE_LEGACY_KERAS=1), same weights and u
    np.testing.assert_allclose(y.numpy(), [[1.8710951805, 2.1383945942, 2.4056937695],
                                           [5.0786871910, 6.0587844849, 7.0388817787]],
                               rtol=1e-6)
    np.testing.assert_allclose(sn.vector_u.numpy(), [[0.49755976, 0.57396954, 0.6503793]],
                               rtol=1e-6)
    eager, traced = _wrapped(3), _wrapped(3)
    step = tf.function(lambda x: traced(x, training=True))
    for _ in range(2):
        want = eager(X, training=True).numpy()
        np.testing.assert_allclose(step(tf.constant(X)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(traced.layer.kernel.numpy(), eager.layer.kernel.numpy(),
                               rtol=1e-12)


def test_converges_to_unit_spectral_norm_and_zero_kernel_is_kept():
    sn = layers.SpectralNormalization(layers.Conv2D(4, 3, dtype="float64"),
                                      power_iterations=30, dtype="float64")
    sn(np.ones((1, 5, 5, 2)), training=True)
    w = sn.layer.kernel.numpy().reshape(-1, 4)
    assert np.linalg.svd(w, compute_uv=False)[0] == pytest.approx(1.0, rel=1e-6)
    zero = _wrapped()
    zero.layer.kernel.assign(np.zeros((4, 3)))
    u0 = zero.vector_u.numpy().copy()
    zero(X, training=True)
    np.testing.assert_array_equal(zero.layer.kernel.numpy(), 0.0)
    np.testing.assert_array_equal(zero.vector_u.numpy(), u0)


def test_embedding_config_weights_and_errors():
    sn = layers.SpectralNormalization(layers.Embedding(10, 4))
    sn(np.array([[1, 2]]), training=True)
    assert sn.kernel is sn.layer.embeddings
    assert [w.name for w in sn.weights] == ["spectral_normalization/embeddings:0",
                                            "spectral_normalization/vector_u:0"]
    assert sn.input_spec.shape == (None, 2)
    config = sn.get_config()
    assert config["power_iterations"] == 1 and config["layer"]["class_name"] == "Embedding"
    again = layers.SpectralNormalization.from_config(config)
    assert again.get_config() == config
    assert isinstance(tf.keras.layers.deserialize(tf.keras.layers.serialize(sn)),
                      layers.SpectralNormalization)
    with pytest.raises(ValueError, match="`power_iterations` should be greater than zero"):
        layers.SpectralNormalization(layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="Flatten object has no attribute 'kernel' nor"):
        layers.SpectralNormalization(layers.Flatten())(np.ones((1, 2, 2)))
    with pytest.raises(ValueError, match=r'layer "spectral_normalization".*expected shape='
                                         r"\(None, 2\), found shape=\(1, 3\)"):
        sn(np.array([[1, 2, 3]]))


def test_fit_normalizes_every_step():
    model = tf.keras.Sequential([
        layers.SpectralNormalization(layers.Dense(4), power_iterations=20,
                                     input_shape=(3,)),
        layers.Dense(1)])
    model.compile("sgd", "mse")
    rng = np.random.default_rng(0)
    model.fit(rng.normal(size=(16, 3)), rng.normal(size=(16, 1)), epochs=2, verbose=0)
    kernel = model.layers[0].layer.kernel.numpy()
    # the last step normalised the kernel, then SGD moved it by one small update
    assert np.linalg.svd(kernel, compute_uv=False)[0] == pytest.approx(1.0, abs=0.1)
