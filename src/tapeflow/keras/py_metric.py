"""``tf.keras.metrics.experimental``: ``PyMetric``, a metric whose state and arithmetic are
plain Python/NumPy (lists of batches, scikit-learn scores...).

A subclass writes ``update_state``, ``result`` and ``reset_state`` on eager values; an
instance calls them through ``tf.py_function``, so the same metric runs in an eager loop and
inside a traced train step (where the Python runs when the step runs, in program order). Its
state is Python attributes, not variables: it is not summed over replicas.

    class Median(tf.keras.metrics.experimental.PyMetric):
        def reset_state(self):
            self.errors = []
        def update_state(self, y_true, y_pred, sample_weight=None):
            self.errors.append(np.abs(y_true.numpy() - y_pred.numpy()).ravel())
        def result(self):
            return np.median(np.concatenate(self.errors)) if self.errors else 0.0
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.metrics import Metric


class PyMetric(Metric):
    """Base class for metrics computed in Python on eager values (see the module docstring)."""

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any):
        super().__init__(name=name, dtype=dtype, **kwargs)
        python_update, python_result = self.update_state, self.result

        def update_state(y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
            inputs = [y_true, y_pred] + ([] if sample_weight is None else [sample_weight])
            return tf.py_function(lambda *values: python_update(*values), inputs, Tout=[])

        def result() -> Any:
            return tf.py_function(python_result, [], Tout=self._dtype)

        self.update_state, self.result = update_state, result
        self.reset_state()

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement update_state()")

    def result(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement result()")

    def reset_state(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement reset_state()")

    def merge_state(self, metrics: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement merge_state()")
