"""Scores from per-column sums over [batch, columns] inputs: ``FBetaScore``/``F1Score``
(classification) and ``R2Score`` (regression).

Both keep one sum per column (class or output) in variables created at the first batch, once
the number of columns is known, so they stream over batches and update inside a traced step.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.metrics import Metric, _tensor


class _ColumnSums(Metric):
    """Sums named `_sums`, each of shape [columns] (or `_sum_shape`), built at the first
    update from 2-D `y_true`/`y_pred` with a known last dim."""

    _sums: tuple[str, ...] = ()

    def __init__(self, name: str | None, dtype: Any):
        super().__init__(name=name, dtype=dtype)
        self.built = False

    def _sum_shape(self, columns: int) -> tuple:
        return (columns,)

    def _inputs(self, y_true: Any, y_pred: Any) -> tuple[Any, Any]:
        y_true, y_pred = _tensor(y_true, self._dtype), _tensor(y_pred, self._dtype)
        who = type(self).__name__
        if y_true.shape.rank != 2 or y_pred.shape.rank != 2:
            raise ValueError(f"{who} expects 2D inputs with shape (batch_size, output_dim). "
                             f"Received input shapes: y_pred.shape={y_pred.shape} and "
                             f"y_true.shape={y_true.shape}.")
        if y_pred.shape[-1] is None or y_true.shape[-1] is None:
            raise ValueError(f"{who} expects 2D inputs with shape (batch_size, output_dim), "
                             "with output_dim fully defined (not None). Received input shapes: "
                             f"y_pred.shape={y_pred.shape} and y_true.shape={y_true.shape}.")
        if not y_true.shape.is_compatible_with(y_pred.shape):
            raise ValueError(f"{who}: y_true and y_pred shapes differ: "
                             f"y_true.shape={y_true.shape}, y_pred.shape={y_pred.shape}")
        if not self.built:
            for sum_name in self._sums:
                setattr(self, sum_name,
                        self.add_weight(sum_name, shape=self._sum_shape(int(y_pred.shape[-1]))))
            self.built = True
        return y_true, y_pred

    def _add(self, **sums: Any) -> None:
        for sum_name, value in sums.items():
            getattr(self, sum_name).assign_add(value)


class FBetaScore(_ColumnSums):
    """F-beta per class from thresholded predictions: ``(1 + b^2) P R / (b^2 P + R)``.

    ``threshold=None`` marks each row's highest score positive (ties all count); otherwise a
    score above `threshold` is positive. `average`: None (one score per class), 'micro'
    (pooled counts), 'macro' (mean over classes) or 'weighted' (weighted by true counts).
    """

    _sums = ("true_positives", "false_positives", "false_negatives", "intermediate_weights")

    def __init__(self, average: str | None = None, beta: float = 1.0,
                 threshold: float | None = None, name: str = "fbeta_score", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        who = type(self).__name__
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError(f"{who}: invalid `average` argument value. Expected one of: "
                             f"{{None, 'micro', 'macro', 'weighted'}}. Received: "
                             f"average={average!r}")
        if not isinstance(beta, float) or beta <= 0.0:
            raise ValueError(f"{who}: invalid `beta` argument value. It should be a Python "
                             f"float > 0. Received: beta={beta!r}")
        if threshold is not None and (not isinstance(threshold, float)
                                      or not 0.0 < threshold <= 1.0):
            raise ValueError(f"{who}: invalid `threshold` argument value. It should be a "
                             f"Python float with 0 < threshold <= 1. Received: "
                             f"threshold={threshold!r}")
        self.average, self.beta, self.threshold = average, beta, threshold

    def _sum_shape(self, columns: int) -> tuple:
        return () if self.average == "micro" else (columns,)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = self._inputs(y_true, y_pred)
        if self.threshold is None:
            top = tf.reduce_max(y_pred, axis=-1, keepdims=True)
            positive = tf.logical_and(y_pred >= top, tf.math.abs(y_pred) > 1e-9)
        else:
            positive = y_pred > self.threshold
        positive = tf.cast(positive, self._dtype)
        weight = None if sample_weight is None else tf.reshape(
            _tensor(sample_weight, self._dtype), [-1, 1])
        axis = None if self.average == "micro" else 0

        def total(value: Any) -> Any:
            return tf.reduce_sum(value if weight is None else value * weight, axis=axis)

        self._add(true_positives=total(positive * y_true),
                  false_positives=total(positive * (1.0 - y_true)),
                  false_negatives=total((1.0 - positive) * y_true),
                  intermediate_weights=total(y_true))

    def result(self) -> Any:
        if not self.built:
            raise ValueError(f"{type(self).__name__} has no value yet: call update_state first")
        tp = self.true_positives.read_value()
        precision = tf.math.divide_no_nan(tp, tp + self.false_positives.read_value())
        recall = tf.math.divide_no_nan(tp, tp + self.false_negatives.read_value())
        b2 = self.beta * self.beta
        score = tf.math.divide_no_nan(precision * recall, b2 * precision + recall) * (1.0 + b2)
        if self.average == "weighted":
            support = self.intermediate_weights.read_value()
            return tf.reduce_sum(score * tf.math.divide_no_nan(support, tf.reduce_sum(support)))
        if self.average is not None:
            return tf.reduce_mean(score)
        return score

    def get_config(self) -> dict:
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """FBetaScore with beta = 1: the harmonic mean of precision and recall."""

    def __init__(self, average: str | None = None, threshold: float | None = None,
                 name: str = "f1_score", dtype: Any = None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["beta"]
        return config


class R2Score(_ColumnSums):
    """Coefficient of determination ``1 - SS_res / SS_tot`` per output, aggregated by
    `class_aggregation` (None, 'uniform_average', 'variance_weighted_average'); with
    `num_regressors` p > 0, the adjusted score ``1 - (1 - R2)(n - 1) / (n - p - 1)``.

    As in tf-keras, n counts every entry of y_true seen (rows times outputs), and the
    adjustment is skipped (plain R2) when p >= n - 1.
    """

    _sums = ("squared_sum", "sum", "residual", "count")

    def __init__(self, class_aggregation: str | None = "uniform_average",
                 num_regressors: int = 0, name: str = "r2_score", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        choices = (None, "uniform_average", "variance_weighted_average")
        if class_aggregation not in choices:
            raise ValueError(f"R2Score: invalid value for argument `class_aggregation`. "
                             f"Expected one of {choices}. Received: "
                             f"class_aggregation={class_aggregation!r}")
        if num_regressors < 0:
            raise ValueError("R2Score: invalid value for argument `num_regressors`. Expected a "
                             f"value >= 0. Received: num_regressors={num_regressors}")
        self.class_aggregation, self.num_regressors = class_aggregation, num_regressors
        self.num_samples = self.add_weight("num_samples", dtype="int32")

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = self._inputs(y_true, y_pred)
        weight = tf.ones_like(y_true)
        if sample_weight is not None:
            w = _tensor(sample_weight, self._dtype)
            weight = weight * (tf.expand_dims(w, 1) if w.shape.rank == 1 else w)
        weighted = y_true * weight
        self._add(sum=tf.reduce_sum(weighted, axis=0),
                  squared_sum=tf.reduce_sum(y_true * weighted, axis=0),
                  residual=tf.reduce_sum(tf.math.square(y_true - y_pred) * weight, axis=0),
                  count=tf.reduce_sum(weight, axis=0))
        self.num_samples.assign_add(tf.size(y_true, out_type="int32"))

    def result(self) -> Any:
        if not self.built:
            raise ValueError("R2Score has no value yet: call update_state first")
        total_sum = self.sum.read_value()
        mean = total_sum / self.count.read_value()
        total = self.squared_sum.read_value() - total_sum * mean
        raw = 1.0 - self.residual.read_value() / total
        raw = tf.where(tf.math.is_inf(raw), tf.zeros_like(raw), raw)
        if self.class_aggregation == "uniform_average":
            score = tf.reduce_mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            score = tf.reduce_sum(total * raw) / tf.reduce_sum(total)
        else:
            score = raw
        if self.num_regressors == 0:
            return score
        n = tf.cast(self.num_samples.read_value(), self._dtype)
        p = float(self.num_regressors)
        adjusted = 1.0 - (1.0 - score) * (n - 1.0) / tf.math.maximum(n - p - 1.0, 1.0)
        return tf.where(n - 1.0 > p, adjusted, score)

    def get_config(self) -> dict:
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


CLASSES = {cls.__name__: cls for cls in (FBetaScore, F1Score, R2Score)}
