"""Checkpoints of Keras models: optimizer state round trip and deferred restore into layers."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.train import Checkpoint

keras = tf.keras


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(16, 3)).astype(np.float32), rng.normal(size=(16, 2)).astype(np.float32)


def _model():
    return keras.Sequential([keras.layers.Dense(4, input_shape=(3,)), keras.layers.Dense(2)])


def test_sequential_with_optimizer_resumes_identically(tmp_path):
    x, y = _data()
    model = _model()
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    path = Checkpoint(model=model, optimizer=model.optimizer).save(str(tmp_path / "ckpt"))

    resumed = _model()
    resumed.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    status = Checkpoint(model=resumed, optimizer=resumed.optimizer).restore(path)
    status.assert_existing_objects_matched()
    model.fit(x, y, epochs=1, batch_size=8, verbose=0, shuffle=False)
    resumed.fit(x, y, epochs=1, batch_size=8, verbose=0, shuffle=False)
    status.assert_consumed()  # the Adam slots were restored when fit created them
    for a, b in zip(resumed.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert int(resumed.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy())


class MLP(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(4)
        self.out = keras.layers.Dense(2)

    def call(self, x):
        return self.out(self.hidden(x))


def test_deferred_restore_into_unbuilt_subclassed_model(tmp_path):
    x, _ = _data()
    built = MLP()
    expected = built(x).numpy()
    path = Checkpoint(model=built).save(str(tmp_path / "ckpt"))

    fresh = MLP()
    status = Checkpoint(model=fresh).restore(path)
    with pytest.raises(AssertionError, match="model/hidden/kernel"):
        status.assert_consumed()
    np.testing.assert_allclose(fresh(x).numpy(), expected, rtol=1e-6)
    status.assert_consumed()
    np.testing.assert_array_equal(fresh.hidden.kernel.numpy(), built.hidden.kernel.numpy())


def test_deferred_value_with_wrong_shape_is_a_clear_error(tmp_path):
    x, _ = _data()
    built = MLP()
    built(x)
    path = Checkpoint(model=built).save(str(tmp_path / "ckpt"))
    fresh = MLP()
    Checkpoint(model=fresh).restore(path).expect_partial()
    with pytest.raises(tf.errors.InvalidArgumentError, match="model/hidden/kernel.*shape"):
        fresh(np.zeros((2, 5), np.float32))
