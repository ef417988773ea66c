"""What ``compile(loss=..., metrics=...)`` turns into: the total loss and the metric objects.

Losses and metrics may be given once (for every output) or per output, as a list in output
order or a dict keyed by output name; ``structures.per_output`` does that pairing. String
metrics ``'accuracy'``/``'acc'`` and ``'crossentropy'``/``'ce'`` are resolved at the first
batch from the shapes of y_true and y_pred, as Keras does: a last dim of 1 means binary, a
label with fewer dims (or a last dim of 1 against many classes) means sparse.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.framework import nest
from tapeflow.keras import backend
from tapeflow.keras import losses as losses_mod
from tapeflow.keras import metrics as metrics_mod
from tapeflow.keras.engine import ragged_targets, structures


def _loss_object(spec: Any) -> Any:
    fn = losses_mod.get(spec)
    if fn is None or isinstance(fn, losses_mod.Loss):
        return fn
    return losses_mod.LossFunctionWrapper(fn, name=getattr(fn, "__name__", "loss"))


def match_dtype_and_rank(y_t: Any, y_p: Any, sw: Any) -> tuple[Any, Any, Any]:
    """Keras's fix-ups before a loss or metric: labels of shape (batch,) against predictions
    of shape (batch, 1) gain the unit axis (otherwise they would broadcast to (batch, batch)),
    labels take the predictions' dtype when both are floating or both integer, and sample
    weights take the predictions' dtype."""
    if isinstance(y_p, tf.RaggedTensor) or isinstance(y_t, tf.RaggedTensor):
        return _match_ragged(y_t, y_p, sw)
    y_t = tf.convert_to_tensor(y_t)
    p_rank = y_p.shape.rank
    if y_t.shape.rank == 1 and p_rank == 2:
        y_t = tf.expand_dims(y_t, -1)
    if (y_t.dtype.is_floating and y_p.dtype.is_floating) or (
            y_t.dtype.is_integer and y_p.dtype.is_integer):
        if y_t.dtype != y_p.dtype:
            y_t = tf.cast(y_t, y_p.dtype)
    if sw is not None:
        sw = tf.convert_to_tensor(sw)
        if sw.shape.rank == 1 and p_rank == 2:
            sw = tf.expand_dims(sw, -1)
        if sw.dtype != y_p.dtype:
            sw = tf.cast(sw, y_p.dtype)
    return y_t, y_p, sw


def _match_ragged(y_t: Any, y_p: Any, sw: Any) -> tuple[Any, Any, Any]:
    """The dtype fix-ups for ragged targets or predictions (ranks are left to the ragged
    losses and metrics: keras/engine/ragged_targets.py)."""
    if not isinstance(y_t, tf.RaggedTensor):
        y_t = tf.convert_to_tensor(y_t)
    if (y_t.dtype.is_floating and y_p.dtype.is_floating) or (
            y_t.dtype.is_integer and y_p.dtype.is_integer):
        if y_t.dtype != y_p.dtype:
            y_t = tf.cast(y_t, y_p.dtype)
    if sw is not None and not isinstance(sw, tf.RaggedTensor):
        sw = tf.cast(tf.convert_to_tensor(sw), y_p.dtype)
    return y_t, y_p, sw


class LossesContainer:
    """Total loss = sum over outputs of weight * loss(y_true, y_pred) + regularization.

    Losses, loss weights, targets and sample weights are paired with the outputs by
    ``structures.per_output`` (by output name for dicts, by position for lists).
    """

    def __init__(self, loss: Any, loss_weights: Any = None, output_names: list[str] | None = None):
        self._spec = loss
        self._weights_spec = loss_weights
        self._output_names = output_names
        self.loss_metric = metrics_mod.Mean(name="loss")
        self._names: list[str] | None = None
        self._losses: list | None = None
        self._weights: list | None = None
        self.per_output_metrics: list = []

    def _build(self, y_pred: Any) -> None:
        names = structures.output_names_for(y_pred, self._output_names)
        self._losses = [_loss_object(spec)
                        for spec in structures.per_output(self._spec, names, "loss")]
        self._weights = structures.per_output(self._weights_spec, names, "loss_weights")
        if len(names) > 1:
            labels = _labels(names, self._output_names)
            self.per_output_metrics = [metrics_mod.Mean(name=f"{label}_loss") if fn else None
                                       for label, fn in zip(labels, self._losses)]
        self._names = names

    @property
    def metrics(self) -> list:
        """The total-loss mean and the per-output loss means, once a batch has been seen (a
        custom ``train_step`` that never calls the container reports none of them)."""
        if self._names is None:
            return []
        return [self.loss_metric] + [m for m in self.per_output_metrics if m is not None]

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None,
                 regularization_losses: list | None = None) -> Any:
        if self._names is None:
            self._build(y_pred)
        flat_pred = nest.flatten(y_pred)
        flat_true = structures.per_output(y_true, self._names, "y")
        sample_weights = structures.per_output(sample_weight, self._names, "sample_weight")
        total = None
        batch = None
        for i, (fn, weight, yt, yp, sw) in enumerate(zip(self._losses, self._weights, flat_true,
                                                          flat_pred, sample_weights)):
            if fn is None or yt is None:
                continue
            yt, yp, sw = match_dtype_and_rank(yt, yp, sw)
            sw = losses_mod.apply_mask(yp, sw, getattr(yp, "_keras_mask", None))
            value = fn(yt, yp, sample_weight=sw)
            if batch is None:
                batch = _batch_size(yt)
            if self.per_output_metrics:
                self.per_output_metrics[i].update_state(value, sample_weight=batch)
            term = value * weight if weight is not None and weight != 1.0 else value
            total = term if total is None else total + term
        if total is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()` "
                             f"and targets `y` for the outputs {self._names}.")
        if regularization_losses:
            total = total + tf.add_n([tf.cast(r, total.dtype) for r in regularization_losses])
        self.loss_metric.update_state(total, sample_weight=batch)
        # several replicas: their gradients are summed, so each contributes loss / replicas
        return tf.distribute.scale_loss_for_distribution(total)

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()


def _labels(names: list[str], output_names: list[str] | None) -> list[str]:
    """What per-output metric names start with: the output layers' names (also for a dict of
    outputs, which is keyed by its own keys), as Keras names them."""
    return list(output_names) if output_names and len(output_names) == len(names) else names


def _batch_size(x: Any) -> Any:
    return tf.cast(tf.shape(x)[0], "float32")


def _copy_metric(metric: Any) -> Any:
    """A fresh metric like `metric`, for a Metric object broadcast to several outputs."""
    if type(metric) is metrics_mod.MeanMetricWrapper:
        return metrics_mod.MeanMetricWrapper(metric._fn, **metric.get_config())
    return type(metric).from_config(metric.get_config())


class MetricsContainer:
    """The compiled metrics of every output, created at the first batch.

    ``metrics`` are updated without sample weights, ``weighted_metrics`` with them, as in
    Keras; with several outputs each name gains the output name as a prefix.
    """

    def __init__(self, metrics: Any, weighted_metrics: Any = None,
                 output_names: list[str] | None = None):
        self._spec = metrics
        self._weighted_spec = weighted_metrics
        self._output_names = output_names
        self._names: list[str] | None = None
        self._metrics: list[list] = []
        self._weighted: list[list] = []

    @property
    def metrics(self) -> list:
        return [m for plain, weighted in zip(self._metrics, self._weighted)
                for m in plain + weighted]

    def _objects(self, spec: Any, yt: Any, yp: Any, copy: bool) -> list:
        entries = nest.flatten(spec) if spec is not None else []
        out = []
        for entry in entries:
            if entry is None:
                continue
            m = _metric_object(entry, yp if yt is None else yt, yp)
            out.append(_copy_metric(m) if copy and m is entry else m)
        return out

    def _build(self, flat_true: list, flat_pred: list, names: list[str]) -> None:
        multi = len(names) > 1
        # a Metric object given once for several outputs is copied per output, as Keras does
        copy_plain = multi and structures.is_broadcast(self._spec)
        copy_weighted = multi and structures.is_broadcast(self._weighted_spec)
        specs = structures.per_output(self._spec, names, "metrics", broadcast_lists=True)
        wspecs = structures.per_output(self._weighted_spec, names, "weighted_metrics",
                                       broadcast_lists=True)
        seen: set[str] = set()
        for name, spec, wspec, yt, yp in zip(_labels(names, self._output_names), specs, wspecs,
                                             flat_true, flat_pred):
            plain = self._objects(spec, yt, yp, copy_plain)
            weighted = self._objects(wspec, yt, yp, copy_weighted)
            for m in plain:
                if multi:
                    m.name = f"{name}_{m.name}"
                seen.add(m.name)
            for m in weighted:
                if multi:
                    m.name = f"{name}_weighted_{m.name}" if f"{name}_{m.name}" in seen \
                        else f"{name}_{m.name}"
                elif m.name in seen:
                    m.name = f"weighted_{m.name}"
                seen.add(m.name)
            self._metrics.append(plain)
            self._weighted.append(weighted)
        self._names = names

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        names = self._names or structures.output_names_for(y_pred, self._output_names)
        flat_pred = nest.flatten(y_pred)
        flat_true = structures.per_output(y_true, names, "y")
        sample_weights = structures.per_output(sample_weight, names, "sample_weight")
        if self._names is None:
            pairs = [ragged_targets.flatten_for_metrics(*match_dtype_and_rank(yt, yp, None))[:2]
                     if yt is not None else (None, yp) for yt, yp in zip(flat_true, flat_pred)]
            self._build([t for t, _ in pairs], [p for _, p in pairs], names)
        for plain, weighted, yt, yp, sw in zip(self._metrics, self._weighted, flat_true,
                                               flat_pred, sample_weights):
            if yt is None or not (plain or weighted):
                continue
            yt, yp, sw = match_dtype_and_rank(yt, yp, sw)
            if ragged_targets.is_ragged(yt, yp):  # metrics see the flat values, as Keras
                yt, yp, sw = ragged_targets.flatten_for_metrics(yt, yp, sw)
            mask = getattr(yp, "_keras_mask", None)  # masked steps do not count (as Keras)
            sw = losses_mod.apply_mask(yp, sw, mask)
            for m in plain:
                if mask is None:
                    m.update_state(yt, yp)
                else:
                    m.update_state(yt, yp, sample_weight=tf.cast(mask, yp.dtype))
            for m in weighted:
                m.update_state(yt, yp, sample_weight=sw)

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()


def _metric_object(spec: Any, y_true: Any, y_pred: Any) -> Any:
    if isinstance(spec, metrics_mod.Metric):
        return spec
    if isinstance(spec, str) and spec.lower() in ("accuracy", "acc", "crossentropy", "ce"):
        return metrics_mod.MeanMetricWrapper(_shape_dependent(spec.lower(), y_true, y_pred),
                                             name=spec)
    resolved = metrics_mod.get(spec)
    if isinstance(resolved, metrics_mod.Metric):
        return resolved
    name = spec if isinstance(spec, str) else getattr(resolved, "name", None) or getattr(
        resolved, "__name__", backend.to_snake_case(type(resolved).__name__))
    return metrics_mod.MeanMetricWrapper(resolved, name=name)


def _shape_dependent(spec: str, y_true: Any, y_pred: Any) -> Any:
    true_shape = tuple(y_true.shape)
    pred_shape = tuple(y_pred.shape)
    is_binary = bool(pred_shape) and pred_shape[-1] == 1
    is_sparse = len(true_shape) < len(pred_shape) or (
        bool(true_shape) and true_shape[-1] == 1 and bool(pred_shape) and pred_shape[-1] != 1)
    if spec in ("accuracy", "acc"):
        if is_binary:
            return metrics_mod.binary_accuracy
        return metrics_mod.sparse_categorical_accuracy if is_sparse else \
            metrics_mod.categorical_accuracy
    if is_binary:
        return losses_mod.binary_crossentropy
    return losses_mod.sparse_categorical_crossentropy if is_sparse else \
        losses_mod.categorical_crossentropy
