"""GaussianNoise and GaussianDropout: identity outside training, the right noise in it, and
usable in ``fit``'s traced step with an unknown batch."""

import numpy as np
import pytest

import tapeflow as tf


def _sample(layer, training):
    x = tf.constant(np.full((4000, 25), 3.0, np.float32))
    return layer(x, training=training).numpy()


def test_gaussian_noise_adds_zero_mean_noise_in_training_only():
    layer = tf.keras.layers.GaussianNoise(0.5)
    np.testing.assert_array_equal(_sample(layer, False), 3.0)
    y = _sample(layer, True)
    assert abs(y.mean() - 3.0) < 0.01 and abs(y.std() - 0.5) < 0.01


def test_gaussian_dropout_multiplies_by_mean_one_noise():
    layer = tf.keras.layers.GaussianDropout(0.2)
    np.testing.assert_array_equal(_sample(layer, False), 3.0)
    y = _sample(layer, True) / 3.0
    assert abs(y.mean() - 1.0) < 0.01 and abs(y.std() - 0.5) < 0.01  # sqrt(0.2 / 0.8)


def test_noise_layers_train_in_fit_with_an_unknown_batch():
    tf.random.set_seed(0)
    model = tf.keras.Sequential([
        tf.keras.layers.GaussianNoise(0.1, input_shape=(6,)), tf.keras.layers.Dense(8),
        tf.keras.layers.GaussianDropout(0.1), tf.keras.layers.Dense(1)])
    model.compile("adam", "mse")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((70, 6)).astype(np.float32)  # batches of 32, 32 and 6
    y = x.sum(axis=1, keepdims=True)
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))


def test_noise_gradients_pass_through():
    """d(x + n)/dx = 1, d(x * m)/dx = m: graph and eager agree, float64."""
    x = tf.constant(np.random.default_rng(1).standard_normal((5, 3)))
    layer = tf.keras.layers.GaussianNoise(0.3, dtype="float64")

    def grad(fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(x) * 2.0)
        return tape.gradient(y, x).numpy()

    np.testing.assert_array_equal(grad(lambda v: layer(v, training=True)), 2.0)
    np.testing.assert_array_equal(grad(tf.function(lambda v: layer(v, training=True))), 2.0)


@pytest.mark.parametrize("make, match", [
    (lambda: tf.keras.layers.GaussianDropout(1.0), "GaussianDropout: `rate` must be in"),
    (lambda: tf.keras.layers.GaussianNoise(-1.0), "GaussianNoise: `stddev` must be >= 0"),
])
def test_bad_arguments_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_configs_round_trip():
    for layer in (tf.keras.layers.GaussianNoise(0.2, seed=3),
                  tf.keras.layers.GaussianDropout(0.4)):
        clone = type(layer).from_config(layer.get_config())
        assert clone.get_config() == layer.get_config()
