"""What ``compile(loss=..., metrics=...)`` turns into: the total loss and the metric objects.

Losses and metrics may be given once (one output) or per output, as a list or a dict keyed by
output layer name. String metrics ``'accuracy'``/``'acc'`` and ``'crossentropy'``/``'ce'`` are
resolved at the first batch from the shapes of y_true and y_pred, as Keras does: a last dim of
1 means binary, a label with fewer dims (or a last dim of 1 against many classes) means sparse.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.framework import nest
from tapeflow.keras import losses as losses_mod
from tapeflow.keras import metrics as metrics_mod


def _per_output(spec: Any, output_names: list[str], what: str) -> list:
    """Expand a loss/metric spec to one entry per output."""
    n = len(output_names)
    if isinstance(spec, dict):
        unknown = set(spec) - set(output_names)
        if unknown:
            raise ValueError(f"Unknown entries in {what} dictionary: {sorted(unknown)}. Only "
                             f"expected the following keys: {output_names}")
        return [spec.get(name) for name in output_names]
    if isinstance(spec, (list, tuple)) and n > 1 and what == "loss":
        if len(spec) != n:
            raise ValueError(f"When passing a list as {what}, it should have one entry per "
                             f"model output. The model has {n} outputs, but you passed "
                             f"{what}={spec!r}")
        return list(spec)
    if isinstance(spec, (list, tuple)) and n > 1 and all(
            isinstance(s, (list, tuple)) or s is None for s in spec):
        return list(spec)
    return [spec] * n


def _loss_name(loss: Any) -> str:
    return getattr(loss, "name", None) or getattr(loss, "__name__", "loss")


class LossesContainer:
    """Total loss = sum over outputs of weight * loss(y_true, y_pred) + regularization."""

    def __init__(self, loss: Any, loss_weights: Any = None, output_names: list[str] | None = None):
        self._spec = loss
        self._weights_spec = loss_weights
        self._output_names = output_names or ["output_1"]
        self.loss_metric = metrics_mod.Mean(name="loss")
        self._losses: list | None = None
        self._weights: list | None = None
        self.per_output_metrics: list = []

    def _build(self, n_outputs: int) -> None:
        names = self._output_names if len(self._output_names) == n_outputs else \
            [f"output_{i + 1}" for i in range(n_outputs)]
        fns = [losses_mod.get(spec) for spec in _per_output(self._spec, names, "loss")]
        self._losses = [fn if fn is None or isinstance(fn, losses_mod.Loss)
                        else losses_mod.LossFunctionWrapper(fn, name=_loss_name(fn))
                        for fn in fns]
        if self._weights_spec is None:
            self._weights = [1.0] * n_outputs
        elif isinstance(self._weights_spec, dict):
            self._weights = [self._weights_spec.get(name, 1.0) for name in names]
        else:
            self._weights = list(self._weights_spec)
        if n_outputs > 1:
            self.per_output_metrics = [metrics_mod.Mean(name=f"{name}_loss") if fn else None
                                       for name, fn in zip(names, self._losses)]

    @property
    def metrics(self) -> list:
        return [self.loss_metric] + [m for m in self.per_output_metrics if m is not None]

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None,
                 regularization_losses: list | None = None) -> Any:
        flat_pred = nest.flatten(y_pred)
        flat_true = nest.flatten(y_true) if len(flat_pred) > 1 else [y_true]
        if self._losses is None:
            self._build(len(flat_pred))
        if len(flat_true) != len(flat_pred):
            raise ValueError(f"The model has {len(flat_pred)} outputs but {len(flat_true)} "
                             "targets were given.")
        sample_weights = nest.flatten(sample_weight) if len(flat_pred) > 1 and \
            sample_weight is not None else [sample_weight] * len(flat_pred)
        total = None
        for i, (fn, weight, yt, yp, sw) in enumerate(zip(self._losses, self._weights, flat_true,
                                                          flat_pred, sample_weights)):
            if fn is None or yt is None:
                continue
            value = fn(yt, yp, sample_weight=sw)
            if self.per_output_metrics:
                self.per_output_metrics[i].update_state(value, sample_weight=_batch_size(yp))
            term = value * weight if weight != 1.0 else value
            total = term if total is None else total + term
        if total is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        if regularization_losses:
            total = total + tf.add_n([tf.cast(r, total.dtype) for r in regularization_losses])
        self.loss_metric.update_state(total, sample_weight=_batch_size(flat_pred[0]))
        return total

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()


def _batch_size(x: Any) -> Any:
    return tf.cast(tf.shape(x)[0], "float32")


class MetricsContainer:
    """The compiled metrics of every output, created at the first batch."""

    def __init__(self, metrics: Any, output_names: list[str] | None = None):
        self._spec = metrics
        self._output_names = output_names or ["output_1"]
        self._metrics: list[list] | None = None

    @property
    def metrics(self) -> list:
        return [m for per_output in (self._metrics or []) for m in per_output]

    def _build(self, flat_true: list, flat_pred: list) -> None:
        n = len(flat_pred)
        names = self._output_names if len(self._output_names) == n else \
            [f"output_{i + 1}" for i in range(n)]
        specs = _per_output(self._spec, names, "metrics") if self._spec is not None else [[]] * n
        self._metrics = []
        for i, (spec, yt, yp) in enumerate(zip(specs, flat_true, flat_pred)):
            prefix = f"{names[i]}_" if n > 1 else ""
            entries = spec if isinstance(spec, (list, tuple)) else ([] if spec is None
                                                                     else [spec])
            self._metrics.append([_metric_object(m, yt, yp, prefix) for m in entries])

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        flat_pred = nest.flatten(y_pred)
        flat_true = nest.flatten(y_true) if len(flat_pred) > 1 else [y_true]
        if self._metrics is None:
            self._build(flat_true, flat_pred)
        sample_weights = nest.flatten(sample_weight) if len(flat_pred) > 1 and \
            sample_weight is not None else [sample_weight] * len(flat_pred)
        for per_output, yt, yp, sw in zip(self._metrics, flat_true, flat_pred, sample_weights):
            if yt is None:
                continue
            for m in per_output:
                m.update_state(yt, yp, sample_weight=sw)

    def reset_state(self) -> None:
        for m in self.metrics:
            m.reset_state()


def _metric_object(spec: Any, y_true: Any, y_pred: Any, prefix: str) -> Any:
    if isinstance(spec, metrics_mod.Metric):
        return spec
    if spec in ("accuracy", "acc", "crossentropy", "ce"):
        fn = _shape_dependent(spec, y_true, y_pred)
        name = "accuracy" if spec in ("accuracy", "acc") else "crossentropy"
        if spec == "acc":
            name = "acc"
        return metrics_mod.MeanMetricWrapper(fn, name=prefix + name)
    resolved = metrics_mod.get(spec)
    if isinstance(resolved, metrics_mod.Metric):
        return resolved
    name = spec if isinstance(spec, str) else resolved.__name__
    return metrics_mod.MeanMetricWrapper(resolved, name=prefix + name)


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
