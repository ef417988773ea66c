"""Batch statistics over the global batch of every replica
(``tf.keras.layers.BatchNormalization(synchronized=True)``, and the older
``tf.keras.layers.experimental.SyncBatchNormalization``), so a network with batch norm trains on
N replicas as on one process with N times the batch.

Two passes, as one process computes them: an all-reduce of each replica's sums gives the
global mean, a second one of the sums of squared deviations gives the variance (one pass,
S2 / n - mean^2, loses digits to cancellation). The all-reduce is differentiable
(``CollectiveAllReduce`` across processes, an in-process sum across threads): its gradient is
the all-reduce of the upstream gradients. With one replica it computes the same statistics
locally.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.layers.normalization import BatchNormalization


def synchronized_batch_norm(layer: BatchNormalization, inputs: Any) -> Any:
    """`layer`'s training-mode output with mean and variance over every replica's batch."""
    x = tf.convert_to_tensor(inputs)
    stats_dtype = tf.float32 if x.dtype == tf.float16 else x.dtype
    xs = tf.cast(x, stats_dtype)
    local_n = _count(layer, x)
    ctx = tf.distribute.get_replica_context()
    replicas = ctx.num_replicas_in_sync if ctx is not None else 1
    n = float(local_n * replicas)
    half = layer.moving_mean.shape.as_list()
    shape = [1] * x.shape.rank
    for a in layer._axes:
        shape[a] = x.shape[a]

    def global_sum(local: Any) -> Any:
        return ctx.all_reduce("SUM", local) if replicas > 1 else local

    # two passes, as a one-process batch norm does: S1 -> mean, then sum (x - mean)^2
    mean = global_sum(tf.reduce_sum(xs, axis=layer._reduce_axes)) / n
    centered = xs - tf.reshape(mean, shape)
    variance = global_sum(tf.reduce_sum(centered * centered, axis=layer._reduce_axes)) / n
    mean, variance = tf.reshape(mean, half), tf.reshape(variance, half)
    layer._update_moving(mean, variance * (n / max(n - 1.0, 1.0)))
    return tf.cast(layer._affine(xs, tf.reshape(mean, shape), tf.reshape(variance, shape)),
                   x.dtype)


def _count(layer: BatchNormalization, x: Any) -> int:
    shape = x.shape.as_list()
    n = 1
    for a in layer._reduce_axes:
        if shape[a] is None:
            raise ValueError(f"BatchNormalization {layer.name!r} (synchronized): training needs "
                             f"the static size of the reduced axes, got input shape {x.shape}")
        n *= shape[a]
    return n


class SyncBatchNormalization(BatchNormalization):
    """Batch normalization with statistics synchronized across replicas (the experimental
    name of ``BatchNormalization(synchronized=True)``)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs["synchronized"] = True
        super().__init__(*args, **kwargs)
