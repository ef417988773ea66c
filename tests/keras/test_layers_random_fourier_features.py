"""RandomFourierFeatures: the map written in NumPy with the layer's weights, the kernels its
features approximate (Monte Carlo, 20000 features), eager vs tf.function, config, errors."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, layers

RFF = layers.experimental.RandomFourierFeatures
X = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32) * 0.5


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_map_formula_weights_and_traced():
    layer = RFF(16)
    y = layer(X)
    w, b, s = (v.numpy() for v in (layer.unscaled_kernel, layer.bias, layer.kernel_scale))
    np.testing.assert_allclose(y.numpy(), np.cos(X @ (w / s) + b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tf.function(layer)(tf.constant(X)).numpy(), y.numpy(),
                               rtol=1e-6)
    assert s[0] == pytest.approx(np.sqrt(3 / 2))  # Keras's default Gaussian scale
    assert [v.name for v in layer.weights] == ["random_fourier_features/unscaled_kernel:0",
                                               "random_fourier_features/bias:0",
                                               "random_fourier_features/kernel_scale:0"]
    assert layer.trainable_weights == []  # not trainable by default
    trainable = RFF(4, trainable=True)
    trainable(X)
    assert [v.name for v in trainable.trainable_weights] == [
        "random_fourier_features_1/kernel_scale:0"]


@pytest.mark.parametrize("kind,scale", [("gaussian", 0.8), ("laplacian", 1.5)])
def test_features_approximate_their_kernel(kind, scale):
    np.random.seed(0)
    tf.random.set_seed(0)
    layer = RFF(20000, kernel_initializer=kind, scale=scale)
    z = layer(X).numpy().astype(np.float64)
    approx = 2.0 / 20000 * z @ z.T
    diff = X[:, None, :].astype(np.float64) - X[None, :, :]
    exact = np.exp(-(diff ** 2).sum(-1) / (2 * scale ** 2)) if kind == "gaussian" else \
        np.exp(-np.abs(diff).sum(-1) / scale)
    np.testing.assert_allclose(approx, exact, atol=0.05)


def test_config_and_errors():
    layer = RFF(6, kernel_initializer="laplacian", scale=2.0, name="rff")
    config = layer.get_config()
    assert config == {"name": "rff", "trainable": False, "dtype": "float32", "output_dim": 6,
                      "kernel_initializer": "laplacian", "scale": 2.0}
    assert RFF.from_config(config).get_config() == config
    again = tf.keras.layers.deserialize(tf.keras.layers.serialize(layer))
    assert isinstance(again, RFF) and again.get_config() == config
    with pytest.raises(ValueError, match="`output_dim` should be a positive integer"):
        RFF(0)
    with pytest.raises(ValueError, match="Unsupported `kernel_initializer`: cosine"):
        RFF(3, kernel_initializer="cosine")
    with pytest.raises(ValueError, match="`scale` should be a positive float"):
        RFF(3, scale=-1.0)
    with pytest.raises(ValueError, match="The rank of the input tensor should be 2"):
        RFF(3)(np.ones((2, 2, 2), np.float32))
    built = RFF(3)
    built(X)
    with pytest.raises(ValueError, match="expected axis 1 of input shape to have value 3"):
        built(np.ones((2, 4), np.float32))
