"""Ragged targets and predictions in losses and metrics, as tf-keras 2.21 takes them.

A loss of ragged ``y_pred`` with a per-step axis ([batch, (steps), k]) is the loss of every
step (the flat values), averaged over all steps of the batch; a ragged ``y_pred`` of
[batch, (steps)] gives one loss per row (the loss function reduces each row), averaged over
rows. Metrics see the flat values of both. Sample weights are per row and repeat for each step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tapeflow as tf
from tapeflow.ragged.tensor import RaggedTensor


def is_ragged(*xs: Any) -> bool:
    return any(isinstance(x, RaggedTensor) for x in xs)


def _flat_pair(y_true: Any, y_pred: RaggedTensor) -> tuple[Any, Any]:
    if not isinstance(y_true, RaggedTensor):
        raise ValueError(f"A ragged prediction of shape {y_pred.shape} needs ragged targets "
                         f"with the same row lengths, got a {type(y_true).__name__} of shape "
                         f"{y_true.shape}")
    if y_true.ragged_rank != y_pred.ragged_rank:
        raise ValueError(f"Ragged targets {y_true.shape} and predictions {y_pred.shape} differ "
                         f"in ragged rank")
    return y_true.flat_values, y_pred.flat_values


def per_step_weights(sample_weight: Any, y_pred: RaggedTensor) -> Any:
    """Per-row sample weights repeated for each value of the row."""
    if sample_weight is None or isinstance(sample_weight, RaggedTensor):
        return None if sample_weight is None else sample_weight.flat_values
    rows = y_pred.value_rowids()
    for _ in range(y_pred.ragged_rank - 1):
        rows = tf.gather(y_pred.nested_value_rowids()[0], rows)
    return tf.gather(tf.reshape(sample_weight, [-1]), rows)


def loss_values(fn: Callable, y_true: Any, y_pred: Any, **kwargs: Any) -> tuple[Any, bool]:
    """(losses, per_step): the loss function's values on ragged arguments; per_step says the
    values are one per step (flat values), else one per row."""
    if not isinstance(y_pred, RaggedTensor):
        return fn(y_true.to_tensor(), y_pred, **kwargs), False
    if not isinstance(y_true, RaggedTensor):
        return fn(y_true, y_pred.to_tensor(), **kwargs), False
    if y_pred.shape.rank is not None and y_pred.shape.rank > y_pred.ragged_rank + 1:
        flat_true, flat_pred = _flat_pair(y_true, y_pred)
        return fn(flat_true, flat_pred, **kwargs), True
    return tf.map_fn(lambda rows: fn(rows[0], rows[1], **kwargs), (y_true, y_pred),
                     fn_output_signature=y_pred.dtype), False


def flatten_for_metrics(y_true: Any, y_pred: Any, sample_weight: Any) -> tuple[Any, Any, Any]:
    """What a metric sees of ragged arguments: the flat values (TF's
    ragged_assert_compatible_and_get_flat_values)."""
    if not isinstance(y_pred, RaggedTensor):
        return (y_true.to_tensor() if isinstance(y_true, RaggedTensor) else y_true), y_pred, \
            sample_weight
    flat_true, flat_pred = _flat_pair(y_true, y_pred)
    return flat_true, flat_pred, per_step_weights(sample_weight, y_pred)
