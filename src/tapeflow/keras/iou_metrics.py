"""Intersection-over-union metrics from one streamed confusion matrix: ``IoU``, ``MeanIoU``,
``BinaryIoU``, ``OneHotIoU``, ``OneHotMeanIoU``.

Every update adds the batch's weighted [num_classes, num_classes] confusion matrix (rows: true
class, columns: predicted class) to a variable; a class's IoU is then
``tp / (true + predicted - tp)`` and the result is the mean over the target classes that
appeared (a class never seen nor predicted has no IoU and is left out of the mean).
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.metrics import Metric, _broadcast_weight, _tensor


class IoU(Metric):
    """Mean IoU over `target_class_ids`; integer labels/predictions by default, or scores
    reduced by argmax over `axis` when `sparse_y_true`/`sparse_y_pred` is False."""

    def __init__(self, num_classes: int, target_class_ids: Any, name: str | None = None,
                 dtype: Any = None, ignore_class: int | None = None, sparse_y_true: bool = True,
                 sparse_y_pred: bool = True, axis: int = -1):
        super().__init__(name=name, dtype=dtype)
        who = type(self).__name__
        if int(num_classes) != num_classes or num_classes < 1:
            raise ValueError(f"{who}: num_classes must be a positive integer, got {num_classes!r}")
        self.num_classes = int(num_classes)
        self.target_class_ids = [int(i) for i in target_class_ids]
        if not self.target_class_ids:
            raise ValueError(f"{who}: target_class_ids must name at least one class")
        if max(self.target_class_ids) >= self.num_classes or min(self.target_class_ids) < 0:
            raise ValueError(f"{who}: target class ids {self.target_class_ids} are out of range, "
                             f"which is [0, {self.num_classes})")
        self.ignore_class = ignore_class
        self.sparse_y_true = sparse_y_true
        self.sparse_y_pred = sparse_y_pred
        self.axis = axis
        self.total_cm = self.add_weight("total_confusion_matrix",
                                        shape=(self.num_classes, self.num_classes))

    def _labels(self, y_true: Any, y_pred: Any) -> tuple[Any, Any]:
        """Integer class ids for both sides (argmax of scores unless sparse)."""
        y_true, y_pred = _tensor(y_true), _tensor(y_pred)
        if not self.sparse_y_true:
            y_true = tf.argmax(y_true, axis=self.axis)
        if not self.sparse_y_pred:
            y_pred = tf.argmax(y_pred, axis=self.axis)
        return y_true, y_pred

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = self._labels(y_true, y_pred)
        # Keras casts to the metric's float dtype, then the confusion matrix to integers
        y_true = tf.cast(tf.cast(y_true, self._dtype), "int64")
        y_pred = tf.cast(tf.cast(y_pred, self._dtype), "int64")
        if y_true.shape.num_elements() is not None and y_pred.shape.num_elements() is not None \
                and y_true.shape.num_elements() != y_pred.shape.num_elements():
            raise ValueError(f"{type(self).__name__}: labels and predictions must have the same "
                             f"number of entries, got y_true.shape={y_true.shape} and "
                             f"y_pred.shape={y_pred.shape}")
        weight = tf.ones_like(y_true, dtype=self._dtype)
        if sample_weight is not None:
            weight = _broadcast_weight(_tensor(sample_weight, self._dtype), weight)
        if self.ignore_class is not None:  # ignored entries weigh 0 (their label may be 255)
            keep = tf.math.not_equal(y_true, self.ignore_class)
            weight = weight * tf.cast(keep, self._dtype)
            y_true = tf.where(keep, y_true, tf.zeros_like(y_true))
        matrix = tf.math.confusion_matrix(tf.reshape(y_true, [-1]), tf.reshape(y_pred, [-1]),
                                          num_classes=self.num_classes,
                                          weights=tf.reshape(weight, [-1]), dtype=self._dtype)
        return self.total_cm.assign_add(matrix)

    def result(self) -> Any:
        cm = self.total_cm.read_value()
        tp = tf.linalg.tensor_diag_part(cm)
        denominator = tf.reduce_sum(cm, axis=0) + tf.reduce_sum(cm, axis=1) - tp
        tp = tf.gather(tp, self.target_class_ids)
        denominator = tf.gather(denominator, self.target_class_ids)
        seen = tf.reduce_sum(tf.cast(tf.math.not_equal(denominator, 0), self._dtype))
        iou = tf.math.divide_no_nan(tp, denominator)
        return tf.math.divide_no_nan(tf.reduce_sum(iou), seen)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_classes": self.num_classes,
                "target_class_ids": self.target_class_ids, "ignore_class": self.ignore_class,
                "sparse_y_true": self.sparse_y_true, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of two classes: a prediction >= `threshold` is class 1."""

    def __init__(self, target_class_ids: Any = (0, 1), threshold: float = 0.5,
                 name: str | None = None, dtype: Any = None):
        super().__init__(2, target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_pred = tf.cast(_tensor(y_pred, self._dtype) >= self.threshold, self._dtype)
        return super().update_state(y_true, y_pred, sample_weight)

    def get_config(self) -> dict:
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold,
                "name": self.name, "dtype": self.dtype}


class MeanIoU(IoU):
    """IoU averaged over every class."""

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None,
                 ignore_class: int | None = None, sparse_y_true: bool = True,
                 sparse_y_pred: bool = True, axis: int = -1):
        super().__init__(num_classes, range(int(num_classes)), name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=sparse_y_true,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["target_class_ids"]
        return config


class OneHotIoU(IoU):
    """IoU with one-hot labels (and scores as predictions unless `sparse_y_pred`)."""

    def __init__(self, num_classes: int, target_class_ids: Any, name: str | None = None,
                 dtype: Any = None, ignore_class: int | None = None,
                 sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype,
                         ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["sparse_y_true"]
        return config


class OneHotMeanIoU(MeanIoU):
    """MeanIoU with one-hot labels (and scores as predictions unless `sparse_y_pred`)."""

    def __init__(self, num_classes: int, name: str | None = None, dtype: Any = None,
                 ignore_class: int | None = None, sparse_y_pred: bool = False, axis: int = -1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["sparse_y_true"]
        return config


CLASSES = {cls.__name__: cls for cls in (IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU)}
