"""Metrics built on confusion counts at thresholds: ``Precision``, ``Recall``, ``AUC``, the
counts themselves (``TruePositives``...) and rates at a constraint (``PrecisionAtRecall``...).

Each keeps true/false positive/negative counts per threshold in variables (a prediction above a
threshold counts as positive), so streaming over batches gives the same result as one big batch
and the update runs inside a traced train step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras import backend
from tapeflow.keras.metrics import Metric, _tensor

_COUNTS = ("true_positives", "false_positives", "true_negatives", "false_negatives")
_NEG_INF = -1e10  # tf-keras's threshold below every kept prediction when top_k is set


def _safe_divide(num: Any, den: Any) -> Any:
    return tf.math.divide_no_nan(num, den)


class _ConfusionMetric(Metric):
    """Weighted confusion counts of flattened predictions against each threshold."""

    def __init__(self, thresholds: list[float], counts: tuple[str, ...], name: str | None,
                 dtype: Any, class_id: int | None = None, top_k: int | None = None):
        super().__init__(name=name, dtype=dtype)
        self.thresholds = [float(t) for t in thresholds]
        self.class_id = class_id
        self.top_k = top_k
        self._thresholds = np.asarray(self.thresholds, np.float32)
        self._counts = counts
        self._label_weights = None  # AUC's per-class weights ([classes]), else None
        for count in counts:
            setattr(self, count, self.add_weight(count, shape=(len(self.thresholds),)))

    def _predictions(self, y_pred: Any) -> Any:
        return y_pred

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = self._predictions(_tensor(y_pred, "float32"))
        y_true = _tensor(y_true)
        if self.top_k is not None:
            y_pred = _keep_top_k(y_pred, self.top_k)
        if sample_weight is None:
            weight = tf.ones_like(y_pred)
        else:  # per-sample weights ([batch]) weigh each row of a [batch, classes] prediction
            weight = tf.cast(_tensor(sample_weight), "float32")
            for _ in range((y_pred.shape.rank or 0) - (weight.shape.rank or 0)):
                weight = tf.expand_dims(weight, -1)
            weight = tf.broadcast_to(weight, tf.shape(y_pred))
        if self._label_weights is not None:  # each class's column weighs by its own weight
            weight = weight * self._label_weights
        if self.class_id is not None:
            y_pred, y_true = y_pred[..., self.class_id], y_true[..., self.class_id]
            weight = weight[..., self.class_id]
        label = tf.reshape(tf.cast(tf.not_equal(y_true, 0), "float32"), [-1, 1])
        positive = tf.cast(tf.reshape(y_pred, [-1, 1]) > self._thresholds, "float32")
        weight = tf.reshape(weight, [-1, 1])
        self._add_counts(label, positive, weight)
        return getattr(self, self._counts[0])

    def _add_counts(self, label: Any, positive: Any, weight: Any) -> None:
        """Add the weighted counts, summed over the leading (example) axis: 0/1 `label` and
        `positive` broadcast against each other (examples x thresholds [x labels])."""
        parts = {"true_positives": label * positive, "false_positives": (1 - label) * positive,
                 "true_negatives": (1 - label) * (1 - positive),
                 "false_negatives": label * (1 - positive)}
        for count in self._counts:
            getattr(self, count).assign_add(
                tf.cast(tf.reduce_sum(parts[count] * weight, axis=0), self._dtype))

    def _single(self, value: Any) -> Any:
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self) -> dict:
        thresholds = None if self.thresholds == [_NEG_INF] else self.thresholds
        return {**super().get_config(), "thresholds": thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


def _keep_top_k(y_pred: Any, k: int) -> Any:
    """Each row's k largest predictions as they are, the rest far below any threshold (ties
    go to the lower index, as ``tf.math.top_k``), so only a row's top k can count positive."""
    depth = y_pred.shape[-1]
    top = tf.math.top_k(y_pred, k).indices
    kept = tf.reduce_max(tf.one_hot(top, depth, dtype=y_pred.dtype), axis=-2)
    return tf.where(kept > 0, y_pred, tf.fill(tf.shape(y_pred), tf.cast(_NEG_INF, y_pred.dtype)))


def _checked_thresholds(thresholds: Any, default: float, who: str) -> list[float]:
    values = [default] if thresholds is None else list(np.atleast_1d(thresholds))
    if thresholds is None and default == _NEG_INF:
        return values
    if not all(0.0 <= t <= 1.0 for t in values):
        raise ValueError(f"{who}: thresholds must be in [0, 1], got {values}")
    return values


class Precision(_ConfusionMetric):
    """Fraction of predicted positives (prediction > threshold) that are positive."""

    def __init__(self, thresholds: Any = None, top_k: int | None = None,
                 class_id: int | None = None, name: str | None = None, dtype: Any = None):
        if top_k is not None and (int(top_k) != top_k or top_k < 1):
            raise ValueError(f"Precision: top_k must be a positive integer, got {top_k!r}")
        default = 0.5 if top_k is None else _NEG_INF  # with top_k every kept row counts
        super().__init__(_checked_thresholds(thresholds, default, "Precision"),
                         ("true_positives", "false_positives"), name or "precision", dtype,
                         class_id, top_k)

    def result(self) -> Any:
        tp = self.true_positives.read_value()
        return self._single(_safe_divide(tp, tp + self.false_positives.read_value()))


class Recall(_ConfusionMetric):
    """Fraction of positives predicted positive (prediction > threshold)."""

    def __init__(self, thresholds: Any = None, top_k: int | None = None,
                 class_id: int | None = None, name: str | None = None, dtype: Any = None):
        if top_k is not None and (int(top_k) != top_k or top_k < 1):
            raise ValueError(f"Recall: top_k must be a positive integer, got {top_k!r}")
        default = 0.5 if top_k is None else _NEG_INF  # with top_k every kept row counts
        super().__init__(_checked_thresholds(thresholds, default, "Recall"),
                         ("true_positives", "false_negatives"), name or "recall", dtype,
                         class_id, top_k)

    def result(self) -> Any:
        tp = self.true_positives.read_value()
        return self._single(_safe_divide(tp, tp + self.false_negatives.read_value()))


class AUC(_ConfusionMetric):
    """Area under the ROC or precision-recall curve, from counts at `num_thresholds` points.

    Thresholds are evenly spaced in [0, 1] with the end points moved just outside it (so the
    curve reaches both corners); ``summation_method='interpolation'`` uses trapezoids for ROC
    and the Davis & Goadrich interpolation for PR, ``'minoring'``/``'majoring'`` the lower and
    upper Riemann sums.
    """

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC",
                 summation_method: str = "interpolation", name: str | None = None,
                 dtype: Any = None, thresholds: Any = None, multi_label: bool = False,
                 num_labels: int | None = None, label_weights: Any = None,
                 from_logits: bool = False):
        curve = curve.upper()
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR', got {curve!r}")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError("AUC: summation_method must be 'interpolation', 'minoring' or "
                             f"'majoring', got {summation_method!r}")
        eps = backend.epsilon()
        if thresholds is not None:
            inner = sorted(_checked_thresholds(thresholds, 0.5, "AUC"))
        else:
            if num_thresholds <= 1:
                raise ValueError(f"AUC: num_thresholds must be > 1, got {num_thresholds}")
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__([0.0 - eps, *inner, 1.0 + eps], _COUNTS, name or "auc", dtype)
        self.num_thresholds = len(self.thresholds)
        self.curve = curve
        self.summation_method = summation_method
        self.from_logits = from_logits
        self.multi_label = bool(multi_label)
        self.num_labels = num_labels
        self.label_weights = None
        if label_weights is not None:
            self.label_weights = np.asarray(label_weights, np.float32).reshape(-1)
            if np.any(self.label_weights < 0):
                raise ValueError(f"AUC: label_weights must be >= 0, got {label_weights}")
            if not self.multi_label:  # weigh each class's column of the pooled counts
                self._label_weights = self.label_weights
        if self.multi_label:  # counts per threshold and label: [num_thresholds, num_labels]
            self._variables.clear()
            if num_labels is not None:
                self._build_label_counts(int(num_labels))

    def _build_label_counts(self, labels: int) -> None:
        for count in self._counts:
            setattr(self, count, self.add_weight(count, shape=(self.num_thresholds, labels)))
        self.num_labels = labels

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        if not self.multi_label:
            return super().update_state(y_true, y_pred, sample_weight)
        y_pred = self._predictions(_tensor(y_pred, "float32"))
        y_true = _tensor(y_true)
        if y_pred.shape.rank != 2:
            raise ValueError(f"AUC(multi_label=True): predictions must be [batch, labels], got "
                             f"shape {y_pred.shape}")
        if not self._variables:
            self._build_label_counts(int(y_pred.shape[-1]))
        weight = tf.ones_like(y_pred) if sample_weight is None else tf.broadcast_to(
            tf.reshape(tf.cast(_tensor(sample_weight), "float32"), [-1, 1]), tf.shape(y_pred))
        label = tf.expand_dims(tf.cast(tf.not_equal(y_true, 0), "float32"), 1)  # [N, 1, L]
        positive = tf.cast(tf.expand_dims(y_pred, 1) > self._thresholds[:, None], "float32")
        weight = tf.expand_dims(weight, 1)
        self._add_counts(label, positive, weight)
        return self.true_positives

    def _over_labels(self, by_label: Any) -> Any:
        """One number from the per-label areas: their mean, or weighted by label_weights."""
        if not self.multi_label:
            return by_label
        if self.label_weights is None:
            return tf.reduce_mean(by_label)
        w = tf.constant(self.label_weights)
        return _safe_divide(tf.reduce_sum(by_label * w), tf.reduce_sum(w))

    def _predictions(self, y_pred: Any) -> Any:
        return tf.sigmoid(y_pred) if self.from_logits else y_pred

    def result(self) -> Any:
        tp, fp, tn, fn = (getattr(self, c).read_value() for c in _COUNTS)
        recall = _safe_divide(tp, tp + fn)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._over_labels(self._interpolated_pr_auc(tp, fp, fn))
        if self.curve == "ROC":
            x, y = _safe_divide(fp, fp + tn), recall
        else:
            x, y = recall, _safe_divide(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = tf.minimum(y[:-1], y[1:])
        else:
            heights = tf.maximum(y[:-1], y[1:])
        return self._over_labels(tf.reduce_sum((x[:-1] - x[1:]) * heights, axis=0))

    @staticmethod
    def _interpolated_pr_auc(tp: Any, fp: Any, fn: Any) -> Any:
        """Precision interpolated linearly in true positives between thresholds (Davis &
        Goadrich 2006), integrated exactly over recall."""
        predicted = tp + fp
        d_tp = tp[:-1] - tp[1:]
        d_pred = predicted[:-1] - predicted[1:]
        slope = _safe_divide(d_tp, tf.maximum(d_pred, 0.0))
        intercept = tp[1:] - slope * predicted[1:]
        both = tf.logical_and(predicted[:-1] > 0, predicted[1:] > 0)
        ratio = tf.where(both, _safe_divide(predicted[:-1], tf.maximum(predicted[1:], 0.0)),
                         tf.ones_like(predicted[1:]))
        increments = _safe_divide(slope * (d_tp + intercept * tf.math.log(ratio)),
                                  tf.maximum(tp[1:] + fn[1:], 0.0))
        return tf.reduce_sum(increments, axis=0)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "num_thresholds": self.num_thresholds,
                "curve": self.curve, "summation_method": self.summation_method,
                "thresholds": self.thresholds[1:-1], "from_logits": self.from_logits,
                "multi_label": self.multi_label, "num_labels": self.num_labels,
                "label_weights": None if self.label_weights is None
                else self.label_weights.tolist()}


class _ThresholdCount(_ConfusionMetric):
    """One weighted confusion count per threshold (a number when there is one threshold)."""

    _count = ""

    def __init__(self, thresholds: Any = None, name: str | None = None, dtype: Any = None):
        super().__init__(_checked_thresholds(thresholds, 0.5, type(self).__name__),
                         (self._count,), name, dtype)
        self._given_thresholds = thresholds

    def result(self) -> Any:
        return self._single(getattr(self, self._count).read_value())

    def get_config(self) -> dict:
        thresholds = self._given_thresholds
        if thresholds is not None and not isinstance(thresholds, (int, float)):
            thresholds = [float(t) for t in np.atleast_1d(thresholds)]
        return {"name": self.name, "dtype": self.dtype, "thresholds": thresholds}


class TruePositives(_ThresholdCount):
    """Weighted count of positives predicted above the threshold."""

    _count = "true_positives"


class FalsePositives(_ThresholdCount):
    """Weighted count of negatives predicted above the threshold."""

    _count = "false_positives"


class TrueNegatives(_ThresholdCount):
    """Weighted count of negatives predicted at or below the threshold."""

    _count = "true_negatives"


class FalseNegatives(_ThresholdCount):
    """Weighted count of positives predicted at or below the threshold."""

    _count = "false_negatives"


def _rates(tp: Any, fp: Any, tn: Any, fn: Any) -> dict[str, Any]:
    recall = _safe_divide(tp, tp + fn)
    return {"precision": _safe_divide(tp, tp + fp), "recall": recall, "sensitivity": recall,
            "specificity": _safe_divide(tn, tn + fp)}


class _RateAtConstraint(_ConfusionMetric):
    """The best `_dependent` rate over the thresholds whose `_constrained` rate is at least
    `value` (0 when none is); Keras's ``SensitivitySpecificityBase``.

    `num_thresholds` evenly spaced thresholds from 0 to 1 (one threshold: 0.5); a prediction
    above a threshold counts as positive.
    """

    _constrained = _dependent = ""

    def __init__(self, value: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None):
        who = type(self).__name__
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{who}: argument `{self._constrained}` must be in the range "
                             f"[0, 1], got {value}")
        if int(num_thresholds) != num_thresholds or num_thresholds <= 0:
            raise ValueError(f"{who}: argument `num_thresholds` must be an integer > 0, got "
                             f"{num_thresholds}")
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.5] if num_thresholds == 1 else [0.0, *inner, 1.0]
        super().__init__(thresholds, _COUNTS, name, dtype, class_id)
        self.value = float(value)
        self.num_thresholds = int(num_thresholds)
        setattr(self, self._constrained, value)

    def result(self) -> Any:
        rates = _rates(*(getattr(self, c).read_value() for c in _COUNTS))
        feasible = rates[self._constrained] >= self.value
        # the rates are >= 0, so the max over all with the infeasible ones zeroed is the max
        # over the feasible ones, and 0 when there is none
        return tf.reduce_max(tf.where(feasible, rates[self._dependent],
                                      tf.zeros_like(rates[self._dependent])))

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "class_id": self.class_id,
                "num_thresholds": self.num_thresholds, self._constrained: self.value}


class SensitivityAtSpecificity(_RateAtConstraint):
    """Best sensitivity (recall) at specificity >= `specificity`."""

    _constrained, _dependent = "specificity", "sensitivity"

    def __init__(self, specificity: float, num_thresholds: int = 200,
                 class_id: int | None = None, name: str | None = None, dtype: Any = None):
        super().__init__(specificity, num_thresholds, class_id, name, dtype)


class SpecificityAtSensitivity(_RateAtConstraint):
    """Best specificity at sensitivity (recall) >= `sensitivity`."""

    _constrained, _dependent = "sensitivity", "specificity"

    def __init__(self, sensitivity: float, num_thresholds: int = 200,
                 class_id: int | None = None, name: str | None = None, dtype: Any = None):
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)


class PrecisionAtRecall(_RateAtConstraint):
    """Best precision at recall >= `recall`."""

    _constrained, _dependent = "recall", "precision"

    def __init__(self, recall: float, num_thresholds: int = 200, class_id: int | None = None,
                 name: str | None = None, dtype: Any = None):
        super().__init__(recall, num_thresholds, class_id, name, dtype)


class RecallAtPrecision(_RateAtConstraint):
    """Best recall at precision >= `precision`."""

    _constrained, _dependent = "precision", "recall"

    def __init__(self, precision: float, num_thresholds: int = 200,
                 class_id: int | None = None, name: str | None = None, dtype: Any = None):
        super().__init__(precision, num_thresholds, class_id, name, dtype)


CLASSES = {cls.__name__: cls for cls in (
    Precision, Recall, AUC, TruePositives, FalsePositives, TrueNegatives, FalseNegatives,
    SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall, RecallAtPrecision)}
