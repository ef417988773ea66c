"""``tf.keras.losses``: per-sample loss functions and ``Loss`` objects with Keras reductions.

A loss function maps (y_true, y_pred) to one value per sample (the mean or sum over the last
axis); a ``Loss`` object then weights those values by ``sample_weight`` and reduces them:
``sum_over_batch_size`` (the default, 'auto') divides the weighted sum by the number of values,
not by the sum of the weights, exactly as Keras does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import tapeflow as tf
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.keras import backend


class Reduction:
    """How a ``Loss`` reduces per-sample values (``tf.keras.losses.Reduction``)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key: {key!r}. Expected keys are "
                             f"{cls.all()}")


def _as_tensor(x: Any, dtype: Any = None) -> Any:
    if hasattr(x, "dtype") and hasattr(x, "shape") and not hasattr(x, "__array_interface__"):
        return x if dtype is None or x.dtype == dtype else tf.cast(x, dtype)
    return convert_to_tensor(x, dtype=dtype)


def _prepare(y_true: Any, y_pred: Any, name: str = "loss") -> tuple[Any, Any]:
    """Tensors of y_pred's float dtype; a trailing size-1 dim on one side is squeezed; shapes
    that cannot broadcast are refused with `name` and both shapes."""
    y_pred = _as_tensor(y_pred)
    if not y_pred.dtype.is_floating:
        y_pred = tf.cast(y_pred, backend.floatx())
    y_true = _as_tensor(y_true, y_pred.dtype)
    rank_true, rank_pred = y_true.shape.rank, y_pred.shape.rank
    if rank_true is not None and rank_pred is not None:
        if rank_pred == rank_true + 1 and y_pred.shape[-1] == 1:
            y_pred = tf.squeeze(y_pred, -1)
        elif rank_true == rank_pred + 1 and y_true.shape[-1] == 1:
            y_true = tf.squeeze(y_true, -1)
    _check_broadcastable(name, y_true, y_pred)
    return y_true, y_pred


def _check_broadcastable(name: str, y_true: Any, y_pred: Any) -> None:
    """Refuse shapes that neither match nor broadcast, naming the function and both shapes
    (unknown dims pass: they are checked when the values arrive)."""
    if y_true.shape.rank is None or y_pred.shape.rank is None:
        return
    for a, b in zip(reversed(y_true.shape.as_list()), reversed(y_pred.shape.as_list())):
        if a is not None and b is not None and a != b and 1 not in (a, b):
            raise ValueError(f"{name}: y_true and y_pred shapes do not match or broadcast: "
                             f"y_true.shape={y_true.shape}, y_pred.shape={y_pred.shape}")


def _log_softmax(logits: Any, axis: int = -1) -> Any:
    return logits - tf.math.reduce_logsumexp(logits, axis=axis, keepdims=True)


# --- per-sample functions --------------------------------------------------------------
def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    """Mean of squared differences over the last axis."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_error")
    return tf.reduce_mean(tf.math.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    """Mean of absolute differences over the last axis."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_error")
    return tf.reduce_mean(tf.math.abs(y_pred - y_true), axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Any:
    """Quadratic for |error| <= delta, linear beyond: robust to outliers."""
    y_true, y_pred = _prepare(y_true, y_pred, "huber")
    error = y_pred - y_true
    abs_error = tf.math.abs(error)
    quadratic = 0.5 * tf.math.square(error)
    linear = delta * abs_error - 0.5 * delta * delta
    return tf.reduce_mean(tf.where(abs_error <= delta, quadratic, linear), axis=-1)


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """Cross-entropy of independent Bernoulli outputs, averaged over the last axis."""
    y_true, y_pred = _prepare(y_true, y_pred, "binary_crossentropy")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return tf.reduce_mean(_binary_crossentropy_values(y_true, y_pred, from_logits), axis=axis)


def _binary_crossentropy_values(y_true: Any, y_pred: Any, from_logits: bool) -> Any:
    """Elementwise Bernoulli cross-entropy (Keras's ``backend.binary_crossentropy``)."""
    if from_logits:
        # max(x, 0) - x*z + log(1 + exp(-|x|)): never overflows for large |x|
        return (tf.math.maximum(y_pred, 0.0) - y_pred * y_true
                + tf.math.log(1.0 + tf.math.exp(-tf.math.abs(y_pred))))
    eps = backend.epsilon()
    p = tf.clip_by_value(y_pred, eps, 1.0 - eps)
    return -(y_true * tf.math.log(p + eps) + (1.0 - y_true) * tf.math.log(1.0 - p + eps))


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """Cross-entropy against one-hot (or soft) targets over the class axis."""
    y_pred = _as_tensor(y_pred)
    y_true = _as_tensor(y_true, y_pred.dtype)
    _check_same_shape("categorical_crossentropy", y_true, y_pred)
    if label_smoothing:
        classes = y_pred.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        log_p = _log_softmax(y_pred, axis)
    else:
        eps = backend.epsilon()
        p = y_pred / tf.reduce_sum(y_pred, axis=axis, keepdims=True)
        log_p = tf.math.log(tf.clip_by_value(p, eps, 1.0 - eps))
    return -tf.reduce_sum(y_true * log_p, axis=axis)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                                    axis: int = -1, ignore_class: int | None = None) -> Any:
    """Cross-entropy against integer class labels (no one-hot needed)."""
    y_pred = _as_tensor(y_pred)
    y_true = _as_tensor(y_true)
    if y_true.shape.rank is not None and y_pred.shape.rank is not None and \
            y_true.shape.rank == y_pred.shape.rank and y_true.shape[-1] == 1:
        y_true = tf.squeeze(y_true, -1)
    # Keras casts to int64; int32 labels index the same classes without the copy
    labels = y_true if y_true.dtype in (tf.int32, tf.int64) else tf.cast(y_true, "int64")
    classes = y_pred.shape[axis]
    if classes is None:
        raise ValueError("sparse_categorical_crossentropy needs the number of classes (the last "
                         f"dim of y_pred) to be known, got shape {y_pred.shape}")
    if not from_logits:  # Keras: the log of the clipped probabilities are the logits
        eps = backend.epsilon()
        y_pred = tf.math.log(tf.clip_by_value(y_pred, eps, 1.0 - eps))
    if axis in (-1, y_pred.shape.rank - 1) and labels.shape.rank == y_pred.shape.rank - 1:
        # Keras's own path: the fused op (one kernel forward, one product backward)
        if ignore_class is None:
            return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=y_pred)
        valid = tf.math.not_equal(labels, ignore_class)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.where(valid, labels, tf.zeros_like(labels)), logits=y_pred)
        return loss * tf.cast(valid, loss.dtype)
    log_p = _log_softmax(y_pred, axis)
    one_hot = tf.one_hot(labels, classes, dtype=y_pred.dtype)
    loss = -tf.reduce_sum(one_hot * log_p, axis=axis)
    if ignore_class is not None:
        loss = loss * tf.cast(tf.math.not_equal(labels, ignore_class), loss.dtype)
    return loss


def _check_same_shape(name: str, y_true: Any, y_pred: Any) -> None:
    if not y_true.shape.is_compatible_with(y_pred.shape):
        raise ValueError(f"{name}: `labels.shape` must equal `logits.shape`, got "
                         f"{y_true.shape} and {y_pred.shape}. For integer labels use "
                         "sparse_categorical_crossentropy.")


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> Any:
    """100 * mean over the last axis of |y_true - y_pred| / max(|y_true|, epsilon)."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_percentage_error")
    diff = tf.math.abs((y_true - y_pred) / tf.math.maximum(tf.math.abs(y_true),
                                                             backend.epsilon()))
    return 100.0 * tf.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of (log(1 + y_pred) - log(1 + y_true))^2, both floored at
    epsilon."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_logarithmic_error")
    eps = backend.epsilon()
    first = tf.math.log(tf.math.maximum(y_pred, eps) + 1.0)
    second = tf.math.log(tf.math.maximum(y_true, eps) + 1.0)
    return tf.reduce_mean(tf.math.square(first - second), axis=-1)


def _signed_labels(y_true: Any) -> Any:
    """Keras's hinge labels: when every label is 0 or 1, map them to -1/+1 (decided on the
    values at run time, so it works traced); other labels are used as they are."""
    is_binary = tf.reduce_all(tf.logical_or(tf.math.equal(y_true, 0.0),
                                            tf.math.equal(y_true, 1.0)))
    return y_true + tf.cast(is_binary, y_true.dtype) * (y_true - 1.0)


def hinge(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of max(1 - y_true * y_pred, 0), labels in {-1, 1} (or 0/1)."""
    y_true, y_pred = _prepare(y_true, y_pred, "hinge")
    margin = 1.0 - _signed_labels(y_true) * y_pred
    return tf.reduce_mean(tf.math.maximum(margin, 0.0), axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of max(1 - y_true * y_pred, 0)^2."""
    y_true, y_pred = _prepare(y_true, y_pred, "squared_hinge")
    margin = 1.0 - _signed_labels(y_true) * y_pred
    return tf.reduce_mean(tf.math.square(tf.math.maximum(margin, 0.0)), axis=-1)


def categorical_hinge(y_true: Any, y_pred: Any) -> Any:
    """max(max_wrong - score_true + 1, 0) per sample, for one-hot y_true."""
    y_pred = _as_tensor(y_pred)
    y_true = _as_tensor(y_true, y_pred.dtype)
    _check_broadcastable("categorical_hinge", y_true, y_pred)
    pos = tf.reduce_sum(y_true * y_pred, axis=-1)
    neg = tf.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return tf.math.maximum(neg - pos + 1.0, 0.0)


def log_cosh(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of log(cosh(y_pred - y_true)), computed without overflow."""
    y_true, y_pred = _prepare(y_true, y_pred, "log_cosh")
    x = y_pred - y_true
    # log(cosh x) = x + log(1 + exp(-2x)) - log 2: cosh itself overflows for |x| > ~89 (f32)
    return tf.reduce_mean(x + tf.math.softplus(-2.0 * x) - math.log(2.0), axis=-1)


def kl_divergence(y_true: Any, y_pred: Any) -> Any:
    """Sum over the last axis of y_true * log(y_true / y_pred), both clipped to [eps, 1]."""
    y_true, y_pred = _prepare(y_true, y_pred, "kl_divergence")
    eps = backend.epsilon()
    y_true = tf.clip_by_value(y_true, eps, 1.0)
    y_pred = tf.clip_by_value(y_pred, eps, 1.0)
    return tf.reduce_sum(y_true * tf.math.log(y_true / y_pred), axis=-1)


def poisson(y_true: Any, y_pred: Any) -> Any:
    """Mean over the last axis of y_pred - y_true * log(y_pred + eps) (Poisson NLL up to a
    constant)."""
    y_true, y_pred = _prepare(y_true, y_pred, "poisson")
    return tf.reduce_mean(y_pred - y_true * tf.math.log(y_pred + backend.epsilon()), axis=-1)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1) -> Any:
    """Minus the cosine of the angle between y_true and y_pred along `axis` (so minimizing
    it aligns them); a zero vector gives 0."""
    y_pred = _as_tensor(y_pred)
    y_true = _as_tensor(y_true, y_pred.dtype)
    _check_broadcastable("cosine_similarity", y_true, y_pred)
    return -tf.reduce_sum(tf.nn.l2_normalize(y_true, axis=axis)
                          * tf.nn.l2_normalize(y_pred, axis=axis), axis=axis)


def binary_focal_crossentropy(y_true: Any, y_pred: Any, apply_class_balancing: bool = False,
                              alpha: float = 0.25, gamma: float = 2.0,
                              from_logits: bool = False, label_smoothing: float = 0.0,
                              axis: int = -1) -> Any:
    """Binary cross-entropy times (1 - p_t)^gamma (Lin et al. 2017), which down-weighs easy
    examples; with class balancing, positives also weigh alpha and negatives 1 - alpha."""
    y_true, y_pred = _prepare(y_true, y_pred, "binary_focal_crossentropy")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    p = tf.sigmoid(y_pred) if from_logits else y_pred
    p_t = y_true * p + (1.0 - y_true) * (1.0 - p)
    focal = tf.math.pow(1.0 - p_t, gamma) * _binary_crossentropy_values(y_true, y_pred,
                                                                         from_logits)
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return tf.reduce_mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true: Any, y_pred: Any, alpha: Any = 0.25,
                                   gamma: float = 2.0, from_logits: bool = False,
                                   label_smoothing: float = 0.0, axis: int = -1) -> Any:
    """Categorical cross-entropy with each class's term times alpha * (1 - p)^gamma; alpha
    may be one number or one per class."""
    y_pred = _as_tensor(y_pred)
    y_true = _as_tensor(y_true, y_pred.dtype)
    _check_same_shape("categorical_focal_crossentropy", y_true, y_pred)
    if label_smoothing:
        classes = y_pred.shape[-1] or tf.cast(tf.shape(y_pred)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / classes
    if from_logits:
        y_pred = tf.nn.softmax(y_pred, axis=axis)
    eps = backend.epsilon()
    p = tf.clip_by_value(y_pred / tf.reduce_sum(y_pred, axis=axis, keepdims=True), eps, 1 - eps)
    alpha = _as_tensor(alpha, p.dtype)
    if alpha.shape.rank and alpha.shape[-1] not in (None, 1, p.shape[-1]):
        raise ValueError("categorical_focal_crossentropy: alpha needs one weight per class, "
                         f"got alpha.shape={alpha.shape} for y_pred.shape={p.shape}")
    return tf.reduce_sum(alpha * tf.math.pow(1.0 - p, gamma) * (-y_true * tf.math.log(p)),
                         axis=axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh


# --- Loss objects ----------------------------------------------------------------------
class Loss:
    """A loss with a reduction: ``loss(y_true, y_pred, sample_weight=None)`` -> a scalar."""

    def __init__(self, reduction: str = Reduction.AUTO, name: str | None = None):
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name or type(self).__name__

    def call(self, y_true: Any, y_pred: Any) -> Any:
        raise NotImplementedError("Loss subclasses implement call(y_true, y_pred)")

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        values = self.call(y_true, y_pred)
        mask = getattr(y_pred, "_keras_mask", None)
        if mask is not None:
            sample_weight = _valid_mask_weights(values, sample_weight, mask, self.reduction)
        return compute_weighted_loss(values, sample_weight, self.reduction)

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        return cls(**config)


def apply_mask(y_pred: Any, sample_weight: Any, mask: Any) -> Any:
    """Sample weights times the predictions' mask (masked steps weigh 0), as Keras's
    compiled losses and metrics do."""
    if mask is None:
        return sample_weight
    mask = tf.cast(mask, y_pred.dtype)
    if sample_weight is None:
        return mask
    weight = tf.cast(sample_weight, mask.dtype)
    rank_m, rank_w = mask.shape.rank, weight.shape.rank
    if rank_m is not None and rank_w is not None:
        if rank_w == rank_m + 1 and weight.shape[-1] == 1:
            weight = tf.squeeze(weight, -1)
        elif rank_m == rank_w + 1 and mask.shape[-1] == 1:
            mask = tf.squeeze(mask, -1)
        while weight.shape.rank < mask.shape.rank:
            weight = tf.expand_dims(weight, -1)
    return weight * mask


def _valid_mask_weights(values: Any, sample_weight: Any, mask: Any, reduction: str) -> Any:
    """A masked mean averages over the kept entries only: kept entries weigh total / kept
    (Keras's ``apply_valid_mask``)."""
    mask = tf.cast(mask, values.dtype)
    if reduction in (Reduction.AUTO, Reduction.SUM_OVER_BATCH_SIZE):
        mask = mask * (tf.cast(tf.size(mask), values.dtype) / tf.reduce_sum(mask))
    return apply_mask(values, sample_weight, mask)


def compute_weighted_loss(values: Any, sample_weight: Any = None,
                          reduction: str = Reduction.SUM_OVER_BATCH_SIZE) -> Any:
    """Weight per-sample losses and reduce them as `reduction` says."""
    if sample_weight is not None:
        weight = _as_tensor(sample_weight, values.dtype)
        rank_v, rank_w = values.shape.rank, weight.shape.rank
        if rank_v is not None and rank_w is not None:
            if rank_w == rank_v + 1 and weight.shape[-1] == 1:
                weight = tf.squeeze(weight, -1)
            while weight.shape.rank < rank_v:
                weight = tf.expand_dims(weight, -1)
        values = values * weight
    if reduction == Reduction.NONE:
        return values
    total = tf.reduce_sum(values)
    if reduction == Reduction.SUM:
        return total
    count = values.shape.num_elements()
    if count is not None:  # a static size divides as a constant (no Size and Cast ops)
        return total / float(count)
    return total / tf.cast(tf.size(values), values.dtype)


class LossFunctionWrapper(Loss):
    """A ``Loss`` around a per-sample function and its keyword arguments."""

    def __init__(self, fn: Callable, reduction: str = Reduction.AUTO, name: str | None = None,
                 **kwargs: Any):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> Any:
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        from tapeflow.keras.engine import ragged_targets

        if not ragged_targets.is_ragged(y_true, y_pred):
            return super().__call__(y_true, y_pred, sample_weight)
        values, per_step = ragged_targets.loss_values(self.fn, y_true, y_pred,
                                                      **self._fn_kwargs)
        if per_step:
            sample_weight = ragged_targets.per_step_weights(sample_weight, y_pred)
        return compute_weighted_loss(values, sample_weight, self.reduction)

    def get_config(self) -> dict:
        return {**self._fn_kwargs, **super().get_config()}

    @classmethod
    def from_config(cls, config: dict) -> Loss:
        # tf-keras's configs also name the function ("fn"); the class already knows it
        return cls(**{k: v for k, v in config.items() if k != "fn"})


class MeanSquaredError(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_squared_error"):
        super().__init__(mean_squared_error, reduction=reduction, name=name)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_absolute_error"):
        super().__init__(mean_absolute_error, reduction=reduction, name=name)


class Huber(LossFunctionWrapper):
    def __init__(self, delta: float = 1.0, reduction: str = Reduction.AUTO,
                 name: str = "huber_loss"):
        super().__init__(huber, reduction=reduction, name=name, delta=delta)


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = Reduction.AUTO, name: str = "binary_crossentropy"):
        super().__init__(binary_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = Reduction.AUTO, name: str = "categorical_crossentropy"):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits: bool = False, ignore_class: int | None = None,
                 reduction: str = Reduction.AUTO, name: str = "sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits, ignore_class=ignore_class)
        self.from_logits = from_logits


class MeanAbsolutePercentageError(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO,
                 name: str = "mean_absolute_percentage_error"):
        super().__init__(mean_absolute_percentage_error, reduction=reduction, name=name)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO,
                 name: str = "mean_squared_logarithmic_error"):
        super().__init__(mean_squared_logarithmic_error, reduction=reduction, name=name)


class Hinge(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "hinge"):
        super().__init__(hinge, reduction=reduction, name=name)


class SquaredHinge(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "squared_hinge"):
        super().__init__(squared_hinge, reduction=reduction, name=name)


class CategoricalHinge(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "categorical_hinge"):
        super().__init__(categorical_hinge, reduction=reduction, name=name)


class LogCosh(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "log_cosh"):
        super().__init__(log_cosh, reduction=reduction, name=name)


class KLDivergence(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "kl_divergence"):
        super().__init__(kl_divergence, reduction=reduction, name=name)


class Poisson(LossFunctionWrapper):
    def __init__(self, reduction: str = Reduction.AUTO, name: str = "poisson"):
        super().__init__(poisson, reduction=reduction, name=name)


class CosineSimilarity(LossFunctionWrapper):
    def __init__(self, axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "cosine_similarity"):
        super().__init__(cosine_similarity, reduction=reduction, name=name, axis=axis)


class BinaryFocalCrossentropy(LossFunctionWrapper):
    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25,
                 gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = Reduction.AUTO,
                 name: str = "binary_focal_crossentropy"):
        super().__init__(binary_focal_crossentropy, reduction=reduction, name=name,
                         apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class CategoricalFocalCrossentropy(LossFunctionWrapper):
    def __init__(self, alpha: Any = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = Reduction.AUTO, name: str = "categorical_focal_crossentropy"):
        super().__init__(categorical_focal_crossentropy, reduction=reduction, name=name,
                         alpha=alpha, gamma=gamma, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


_FUNCTIONS = (mean_squared_error, mean_absolute_error, huber, binary_crossentropy,
              categorical_crossentropy, sparse_categorical_crossentropy,
              mean_absolute_percentage_error, mean_squared_logarithmic_error, hinge,
              squared_hinge, categorical_hinge, log_cosh, kl_divergence, poisson,
              cosine_similarity, binary_focal_crossentropy, categorical_focal_crossentropy)
_BY_NAME: dict[str, Any] = {fn.__name__: fn for fn in _FUNCTIONS}
_BY_NAME.update({
    "mse": mean_squared_error, "MSE": mean_squared_error,
    "mae": mean_absolute_error, "MAE": mean_absolute_error, "huber_loss": huber,
    "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
    "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
    "kld": kl_divergence, "KLD": kl_divergence, "kullback_leibler_divergence": kl_divergence,
    "logcosh": log_cosh,
})
_CLASSES = {cls.__name__: cls for cls in LossFunctionWrapper.__subclasses__()}



def get(identifier: Any) -> Any:
    """A loss function or ``Loss`` from a name (``'mse'``, ``'MeanSquaredError'``) or itself."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        if identifier in _BY_NAME:
            return _BY_NAME[identifier]
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        raise ValueError(f"Unknown loss function: {identifier!r}. Known names: "
                         f"{sorted(set(_BY_NAME) | set(_CLASSES))}")
    if isinstance(identifier, dict):
        cls = _CLASSES.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown loss class in config: {identifier!r}")
        return cls.from_config(identifier.get("config", {}))
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier!r}")


def serialize(loss: Any) -> Any:
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    return loss.__name__


def deserialize(config: Any) -> Any:
    return get(config)
