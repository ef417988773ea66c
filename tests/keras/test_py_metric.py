"""tf.keras.metrics.experimental.PyMetric: a metric in plain Python/NumPy, eager, in a traced
function (through tf.py_function) and in a traced fit/evaluate."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers


class MedianError(keras.metrics.experimental.PyMetric):
    """The median absolute error over every value seen (not a streaming mean)."""

    def reset_state(self):
        self.errors = []

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.errors.append(np.abs(y_true.numpy() - y_pred.numpy()).ravel())

    def result(self):
        return np.median(np.concatenate(self.errors)) if self.errors else 0.0


def test_eager_and_traced_updates():
    m = MedianError(name="median_error")
    assert float(m.result()) == 0.0
    m.update_state([[1.0], [2.0]], [[1.5], [4.0]])
    np.testing.assert_allclose(m([[0.0]], [[0.25]]).numpy(), 0.5)
    step = tf.function(lambda t, p: m.update_state(t, p))
    step(np.array([[3.0]], np.float32), np.array([[6.0]], np.float32))
    step(np.array([[3.0]], np.float32), np.array([[7.0]], np.float32))
    assert len(m.errors) == 4  # the Python ran at each call of the traced function
    np.testing.assert_allclose(m.result().numpy(), np.median([0.5, 2.0, 0.25, 3.0, 4.0]))
    m.reset_state()
    assert m.errors == []


def test_in_a_traced_fit_and_evaluate():
    backend.clear_session()
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(16, 3)).astype(np.float32), rng.normal(size=(16, 1)).astype(np.float32)
    model = keras.Sequential([layers.Dense(1, input_shape=(3,))])
    model.compile("sgd", "mse", metrics=[MedianError(name="median_error")])
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0).history
    assert len(history["median_error"]) == 2
    result = model.evaluate(x, y, verbose=0, return_dict=True)  # reset before evaluating
    np.testing.assert_allclose(result["median_error"],
                               np.median(np.abs(model.predict(x, verbose=0) - y)), rtol=1e-6)


def test_missing_methods_are_named():
    class Incomplete(keras.metrics.experimental.PyMetric):
        def reset_state(self):
            pass

    # raised inside tf.py_function, which passes it on as an op error (TF does the same)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Incomplete must implement update_state"):
        Incomplete().update_state([1.0], [1.0])
