"""``tf.keras.metrics``: streaming metrics whose state lives in variables.

A metric accumulates over batches (``update_state``) and reports on demand (``result``). The
state is held in ``tf.Variable``s updated with ``assign_add``, so the same metric works in an
eager loop and inside a traced training step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import name_scope
from tapeflow.framework.variable import Variable
from tapeflow.keras import backend, losses


def _tensor(x: Any, dtype: Any = None) -> Any:
    if isinstance(x, Variable):
        x = x.read_value()
    if hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, np.ndarray):
        return x if dtype is None or x.dtype == _dtypes.as_dtype(dtype) else tf.cast(x, dtype)
    return convert_to_tensor(np.asarray(x), dtype=dtype)


class Metric:
    """Base class: ``update_state`` accumulates, ``result`` reports, ``reset_state`` clears."""

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any):
        self.name = name or backend.to_snake_case(type(self).__name__)
        self._dtype = _dtypes.as_dtype(dtype or backend.floatx())
        self._variables: list[Variable] = []

    @property
    def dtype(self) -> str:
        return self._dtype.name

    def add_weight(self, name: str, shape: Any = (), dtype: Any = None,
                   initializer: str = "zeros") -> Variable:
        """A non-trainable state variable, zero-initialized."""
        dt = _dtypes.as_dtype(dtype or self._dtype)
        with name_scope(self.name):
            v = Variable(np.zeros(shape, dt._np), trainable=False, name=name, dtype=dt)
        self._variables.append(v)
        return v

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    weights = variables
    non_trainable_weights = variables

    @property
    def trainable_weights(self) -> list:
        return []

    def update_state(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement update_state()")

    def result(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement result()")

    def reset_state(self) -> None:
        """Zero every state variable (start of an epoch)."""
        for v in self._variables:
            v.assign(np.zeros(v.shape.as_list(), v.dtype._np))

    reset_states = reset_state

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict) -> Metric:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"


def _broadcast_weight(weight: Any, values: Any) -> Any:
    """Sample weights shaped like `values`: a trailing size-1 dim squeezed, missing trailing
    dims added, then broadcast (Keras's ``broadcast_weights``)."""
    rank_v, rank_w = values.shape.rank, weight.shape.rank
    if rank_w is not None and rank_v is not None:
        if rank_w == rank_v + 1 and weight.shape[-1] == 1:
            weight = tf.squeeze(weight, -1)
        while weight.shape.rank < rank_v:
            weight = tf.expand_dims(weight, -1)
    return weight * tf.ones_like(values)


class Reduce(Metric):
    """Weighted sum (and count) of every value seen."""

    _divide = True

    def __init__(self, name: str | None = None, dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total")
        if self._divide:
            self.count = self.add_weight("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> Any:
        values = _tensor(values, self._dtype)
        if sample_weight is None:
            total = tf.reduce_sum(values)
            count = tf.cast(tf.size(values), self._dtype)
        else:
            weight = _broadcast_weight(_tensor(sample_weight, self._dtype), values)
            total = tf.reduce_sum(values * weight)
            count = tf.reduce_sum(weight)
        self.total.assign_add(total)
        if self._divide:
            return self.count.assign_add(count)
        return self.total

    def result(self) -> Any:
        if not self._divide:
            return tf.identity(self.total)
        count = self.count.read_value()
        safe = tf.where(count > 0, count, tf.ones_like(count))
        return tf.where(count > 0, self.total.read_value() / safe, tf.zeros_like(count))


class Mean(Reduce):
    """The (weighted) mean of every value seen (``tf.keras.metrics.Mean``)."""

    def __init__(self, name: str = "mean", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)


class Sum(Reduce):
    """The (weighted) sum of every value seen."""

    _divide = False

    def __init__(self, name: str = "sum", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)


class MeanTensor(Metric):
    """The elementwise (weighted) mean of every tensor seen; all must have one shape, fixed by
    the first (or by `shape`)."""

    def __init__(self, name: str = "mean_tensor", dtype: Any = None, shape: Any = None):
        super().__init__(name=name, dtype=dtype)
        self._shape = None
        if shape is not None:
            self._build(tuple(shape))

    def _build(self, shape: tuple) -> None:
        self._shape = shape
        self.total = self.add_weight("total", shape=shape)
        self.count = self.add_weight("count", shape=shape)

    def update_state(self, values: Any, sample_weight: Any = None) -> Any:
        values = _tensor(values, self._dtype)
        shape = tuple(values.shape.as_list())
        if self._shape is None:
            if None in shape:
                raise ValueError(f"MeanTensor: the first values need a fully known shape, got "
                                 f"{values.shape}")
            self._build(shape)
        elif shape != self._shape:
            raise ValueError("MeanTensor input values must always have the same shape. Expected "
                             f"shape (set during the first call): {self._shape}. Got: {shape}")
        count = tf.ones_like(values)
        if sample_weight is not None:
            weight = _broadcast_weight(_tensor(sample_weight, self._dtype), values)
            values, count = values * weight, count * weight
        self.count.assign_add(count)
        return self.total.assign_add(values)

    def result(self) -> Any:
        if self._shape is None:
            raise ValueError("MeanTensor does not have any value yet. Please call the MeanTensor "
                             "instance or use `.update_state(value)` before retrieving the "
                             "result.")
        return tf.math.divide_no_nan(self.total.read_value(), self.count.read_value())


class MeanMetricWrapper(Mean):
    """Mean over samples of ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None, **kwargs: Any):
        super().__init__(name=name or fn.__name__, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(values, sample_weight=sample_weight)

    def get_config(self) -> dict:
        return {**self._fn_kwargs, **super().get_config()}


# --- per-sample metric functions ------------------------------------------------------
def _as_float(mask: Any) -> Any:
    return tf.cast(mask, backend.floatx())


def accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where prediction equals label exactly."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, y_pred.dtype)
    return _as_float(tf.math.equal(y_true, y_pred))


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    """Mean over the last axis of (y_pred > threshold) == y_true."""
    y_true, y_pred = losses._prepare(y_true, y_pred)
    predicted = tf.cast(y_pred > threshold, y_pred.dtype)
    return tf.reduce_mean(_as_float(tf.math.equal(y_true, predicted)), axis=-1)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where argmax of prediction equals argmax of the one-hot label."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    return _as_float(tf.math.equal(tf.argmax(y_true, axis=-1), tf.argmax(y_pred, axis=-1)))


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    """1.0 where argmax of prediction equals the integer label."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    if y_true.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank and \
            y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    labels = tf.cast(y_true, "int64")
    return _as_float(tf.math.equal(labels, tf.argmax(y_pred, axis=-1)))


def _in_top_k(y_pred: Any, labels: Any, k: int) -> Any:
    """TF's in_top_k: a label is in the top k if fewer than k classes score strictly higher."""
    classes = y_pred.shape[-1]
    target = tf.reduce_sum(y_pred * tf.one_hot(labels, classes, dtype=y_pred.dtype), axis=-1,
                           keepdims=True)
    higher = tf.reduce_sum(tf.cast(y_pred > target, "int32"), axis=-1)
    return _as_float(higher < k)


def top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1.0 where the one-hot label's class is among the k highest predictions."""
    y_pred = _tensor(y_pred)
    return _in_top_k(y_pred, tf.argmax(_tensor(y_true), axis=-1), k)


def sparse_top_k_categorical_accuracy(y_true: Any, y_pred: Any, k: int = 5) -> Any:
    """1.0 where the integer label is among the k highest predictions."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true)
    if y_true.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank:
        y_true = tf.squeeze(y_true, -1)
    return _in_top_k(y_pred, tf.cast(y_true, "int64"), k)


# --- metric classes -------------------------------------------------------------------
class Accuracy(MeanMetricWrapper):
    def __init__(self, name: str = "accuracy", dtype: Any = None):
        super().__init__(accuracy, name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "binary_accuracy", dtype: Any = None, threshold: float = 0.5):
        super().__init__(binary_accuracy, name, dtype=dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None):
        super().__init__(categorical_accuracy, name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None):
        super().__init__(sparse_categorical_accuracy, name, dtype=dtype)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype: Any = None):
        super().__init__(top_k_categorical_accuracy, name, dtype=dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, k: int = 5, name: str = "sparse_top_k_categorical_accuracy",
                 dtype: Any = None):
        super().__init__(sparse_top_k_categorical_accuracy, name, dtype=dtype, k=k)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_squared_error", dtype: Any = None):
        super().__init__(losses.mean_squared_error, name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_absolute_error", dtype: Any = None):
        super().__init__(losses.mean_absolute_error, name, dtype=dtype)


class CategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name: str = "categorical_crossentropy", dtype: Any = None,
                 from_logits: bool = False, label_smoothing: float = 0.0):
        super().__init__(losses.categorical_crossentropy, name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    def __init__(self, name: str = "sparse_categorical_crossentropy", dtype: Any = None,
                 from_logits: bool = False):
        super().__init__(losses.sparse_categorical_crossentropy, name, dtype=dtype,
                         from_logits=from_logits)


class BinaryCrossentropy(MeanMetricWrapper):
    def __init__(self, name: str = "binary_crossentropy", dtype: Any = None,
                 from_logits: bool = False, label_smoothing: float = 0.0):
        super().__init__(losses.binary_crossentropy, name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """The cosine of the angle between y_true and y_pred along `axis` (1 when aligned): the
    loss of the same name with the sign flipped."""
    return -losses.cosine_similarity(y_true, y_pred, axis=axis)


class MeanAbsolutePercentageError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_absolute_percentage_error", dtype: Any = None):
        super().__init__(losses.mean_absolute_percentage_error, name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_squared_logarithmic_error", dtype: Any = None):
        super().__init__(losses.mean_squared_logarithmic_error, name, dtype=dtype)


class Hinge(MeanMetricWrapper):
    def __init__(self, name: str = "hinge", dtype: Any = None):
        super().__init__(losses.hinge, name, dtype=dtype)


class SquaredHinge(MeanMetricWrapper):
    def __init__(self, name: str = "squared_hinge", dtype: Any = None):
        super().__init__(losses.squared_hinge, name, dtype=dtype)


class CategoricalHinge(MeanMetricWrapper):
    def __init__(self, name: str = "categorical_hinge", dtype: Any = None):
        super().__init__(losses.categorical_hinge, name, dtype=dtype)


class LogCoshError(MeanMetricWrapper):
    def __init__(self, name: str = "logcosh", dtype: Any = None):
        super().__init__(losses.log_cosh, name, dtype=dtype)


class KLDivergence(MeanMetricWrapper):
    def __init__(self, name: str = "kullback_leibler_divergence", dtype: Any = None):
        super().__init__(losses.kl_divergence, name, dtype=dtype)


class Poisson(MeanMetricWrapper):
    def __init__(self, name: str = "poisson", dtype: Any = None):
        super().__init__(losses.poisson, name, dtype=dtype)


class CosineSimilarity(MeanMetricWrapper):
    def __init__(self, name: str = "cosine_similarity", dtype: Any = None, axis: int = -1):
        super().__init__(cosine_similarity, name, dtype=dtype, axis=axis)


class RootMeanSquaredError(Mean):
    """sqrt of the (weighted) mean of squared errors over every value seen."""

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = losses._prepare(_tensor(y_true, self._dtype), _tensor(y_pred, self._dtype),
                                         "RootMeanSquaredError")
        return super().update_state(tf.math.square(y_pred - y_true), sample_weight)

    def result(self) -> Any:
        return tf.math.sqrt(tf.math.divide_no_nan(self.total.read_value(),
                                                  self.count.read_value()))


class MeanRelativeError(Mean):
    """(Weighted) mean of |y_true - y_pred| / normalizer (0 where the normalizer is 0)."""

    def __init__(self, normalizer: Any, name: str | None = None, dtype: Any = None):
        super().__init__(name=name or "mean_relative_error", dtype=dtype)
        self.normalizer = np.asarray(normalizer, self._dtype._np)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        y_true, y_pred = losses._prepare(_tensor(y_true, self._dtype), _tensor(y_pred, self._dtype),
                                         "MeanRelativeError")
        normalizer = self.normalizer
        if normalizer.ndim == y_pred.shape.rank + 1 and normalizer.shape[-1] == 1:
            normalizer = normalizer[..., 0]
        normalizer = tf.constant(normalizer)
        losses._check_broadcastable("MeanRelativeError (normalizer)", normalizer, y_pred)
        errors = tf.math.divide_no_nan(tf.math.abs(y_true - y_pred), normalizer)
        return super().update_state(errors, sample_weight)

    def get_config(self) -> dict:
        return {**super().get_config(), "normalizer": self.normalizer.tolist()}


mean_squared_error = mse = MSE = losses.mean_squared_error
mean_absolute_error = mae = MAE = losses.mean_absolute_error
binary_crossentropy = losses.binary_crossentropy
categorical_crossentropy = losses.categorical_crossentropy
sparse_categorical_crossentropy = losses.sparse_categorical_crossentropy
mean_absolute_percentage_error = mape = MAPE = losses.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = MSLE = losses.mean_squared_logarithmic_error
hinge, squared_hinge, poisson = losses.hinge, losses.squared_hinge, losses.poisson
kl_divergence = kld = KLD = kullback_leibler_divergence = losses.kl_divergence
log_cosh = logcosh = losses.log_cosh
binary_focal_crossentropy = losses.binary_focal_crossentropy
categorical_focal_crossentropy = losses.categorical_focal_crossentropy

_FUNCTIONS: dict[str, Callable] = {
    "accuracy": accuracy, "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    "mean_squared_error": losses.mean_squared_error, "mse": losses.mean_squared_error,
    "mean_absolute_error": losses.mean_absolute_error, "mae": losses.mean_absolute_error,
    "binary_crossentropy": losses.binary_crossentropy,
    "categorical_crossentropy": losses.categorical_crossentropy,
    "sparse_categorical_crossentropy": losses.sparse_categorical_crossentropy,
    "cosine_similarity": cosine_similarity,
}
# every loss function name (kld, mape, logcosh, hinge...) names the same metric function
_FUNCTIONS.update({k: v for k, v in losses._BY_NAME.items() if k not in _FUNCTIONS
                   and v is not losses.cosine_similarity})
_CLASSES = {cls.__name__: cls for cls in (
    Mean, Sum, MeanTensor, RootMeanSquaredError, MeanRelativeError,
    *MeanMetricWrapper.__subclasses__())}


def get(identifier: Any) -> Any:
    """A metric function or ``Metric`` from a name (``'mae'``, ``'AUC'``...) or itself."""
    if isinstance(identifier, str):
        if identifier in _FUNCTIONS:
            return _FUNCTIONS[identifier]
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        raise ValueError(f"Unknown metric function: {identifier!r}. Known names: "
                         f"{sorted(set(_FUNCTIONS) | set(_CLASSES))}")
    if isinstance(identifier, Metric) or callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")


def serialize(metric: Any) -> Any:
    if isinstance(metric, Metric):
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    return metric.__name__


def deserialize(config: Any) -> Any:
    if isinstance(config, dict):
        return _CLASSES[config["class_name"]].from_config(config.get("config", {}))
    return get(config)


# metrics on confusion counts, IoU and F/R2 scores live in their own modules (they
# subclass Metric, defined above)
from tapeflow.keras import confusion_metrics, iou_metrics, score_metrics  # noqa: E402
from tapeflow.keras import py_metric as experimental  # noqa: E402, F401  (PyMetric)
from tapeflow.keras.confusion_metrics import (  # noqa: E402, F401  (tf.keras.metrics names)
    AUC,
    FalseNegatives,
    FalsePositives,
    Precision,
    PrecisionAtRecall,
    Recall,
    RecallAtPrecision,
    SensitivityAtSpecificity,
    SpecificityAtSensitivity,
    TrueNegatives,
    TruePositives,
)
from tapeflow.keras.iou_metrics import (  # noqa: E402, F401
    BinaryIoU,
    IoU,
    MeanIoU,
    OneHotIoU,
    OneHotMeanIoU,
)
from tapeflow.keras.score_metrics import F1Score, FBetaScore, R2Score  # noqa: E402, F401

_CLASSES.update({**confusion_metrics.CLASSES, **iou_metrics.CLASSES, **score_metrics.CLASSES})
