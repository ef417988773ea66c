"""Adafactor: the update rule written in NumPy (float64), tf-keras 2.21's recorded values,
eager vs tf.function, slots, config, fit."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import optimizers


def _reference(w, grads, lr, decay=-0.8, eps1=1e-30, eps2=1e-3, clip=1.0):
    w = w.copy()
    factored = w.ndim >= 2
    r = np.zeros(w.shape[:-1])
    c = np.zeros(w.shape[:-2] + w.shape[-1:]) if factored else None
    v = np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        rho = min(lr, 1 / np.sqrt(t))
        alpha = max(eps2, np.sqrt(np.mean(w ** 2))) * rho
        g2 = g ** 2 + eps1
        beta = 1 - t ** decay
        if factored:
            r = beta * r + (1 - beta) * g2.mean(-1)
            c = beta * c + (1 - beta) * g2.mean(-2)
            v = (r / r.mean(-1, keepdims=True))[..., None] * c[..., None, :]
        else:
            v = beta * v + (1 - beta) * g2
        u = g / np.sqrt(v)
        w -= alpha * u / max(1.0, np.sqrt(np.mean(u ** 2)) / clip)
    return w


def _grads(shape, steps):
    return [np.sin(np.arange(np.prod(shape)).reshape(shape) * 0.7 + s) for s in range(steps)]


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (6,)])
def test_adafactor_matches_the_rule(shape):
    w0 = np.cos(np.arange(np.prod(shape)).reshape(shape))
    grads = _grads(shape, 5)
    var = tf.Variable(w0)
    # 0.5 is exact in float32, and above 1/sqrt(t) from step 5: both sides of the min
    opt = optimizers.Adafactor(learning_rate=0.5, clip_threshold=0.5)
    for g in grads:
        opt.apply_gradients([(tf.constant(g), var)])
    np.testing.assert_allclose(var.numpy(), _reference(w0, grads, 0.5, clip=0.5), rtol=1e-10)
    names = opt.get_slot_names()
    assert names == ["r", "c", "v"]
    if len(shape) >= 2:
        assert opt.get_slot(var, "r").shape == shape[:-1]
        assert opt.get_slot(var, "c").shape == shape[:-2] + shape[-1:]
    assert int(opt.iterations) == 5


def test_adafactor_recorded_traced_and_config():
    w = tf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4) / 10 - 0.5)
    b = tf.Variable(np.array([0.1, -0.2, 0.3], np.float32))
    opt = optimizers.Adafactor(learning_rate=0.05)
    step = tf.function(lambda g, gb: opt.apply_gradients([(g, w), (gb, b)]))
    for s in range(4):
        step(tf.constant(np.sin(np.arange(12).reshape(3, 4) + s).astype(np.float32)),
             tf.constant(np.cos(np.arange(3) + s).astype(np.float32)))
    # recorded from tf_keras 2.21 (eager), same gradients
    np.testing.assert_allclose(w.numpy()[0], [-0.547378, -0.429589, -0.287743, -0.153734],
                               atol=2e-6)
    np.testing.assert_allclose(b.numpy(), [0.103058, -0.175349, 0.329422], atol=2e-6)
    config = opt.get_config()
    assert {k: config[k] for k in ("beta_2_decay", "epsilon_1", "epsilon_2", "clip_threshold",
                                   "relative_step")} == {
        "beta_2_decay": -0.8, "epsilon_1": 1e-30, "epsilon_2": 1e-3, "clip_threshold": 1.0,
        "relative_step": True}
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again, optimizers.Adafactor) and again.get_config() == config
    assert isinstance(optimizers.get("adafactor"), optimizers.Adafactor)


def test_adafactor_trains_in_fit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
    model.compile(optimizers.Adafactor(learning_rate=0.1), "mse")
    history = model.fit(x, y, epochs=20, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
