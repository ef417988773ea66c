"""``tf.keras.layers.experimental.SyncBatchNormalization``: batch statistics over the global
batch of every replica, so a network with batch norm trains on N workers exactly as on one
process with N times the batch.

Two passes, as one process computes them: an all-reduce of each replica's sums gives the
global mean, a second one of the sums of squared deviations gives the variance (one pass,
S2 / n - mean^2, loses digits to cancellation). The all-reduce is differentiable
(``CollectiveAllReduce``: its gradient is the all-reduce of the upstream gradients). Outside
a multi-worker strategy it computes the same statistics locally.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.layers.normalization import BatchNormalization


class SyncBatchNormalization(BatchNormalization):
    """Batch normalization with statistics synchronized across replicas."""

    def call(self, inputs: Any, training: Any = None):
        if not training:
            return super().call(inputs, training=training)
        x = tf.convert_to_tensor(inputs)
        stats_dtype = tf.float32 if x.dtype == tf.float16 else x.dtype
        xs = tf.cast(x, stats_dtype)
        local_n = self._bessel_count(x)
        ctx = tf.distribute.get_replica_context()
        replicas = ctx.num_replicas_in_sync if ctx is not None else 1
        n = float(local_n * replicas)
        half = self.moving_mean.shape.as_list()
        rank = x.shape.rank
        shape = [1] * rank
        for a in self._axes:
            shape[a] = x.shape[a]
        # two passes, as a one-process batch norm does: S1 -> mean, then sum (x - mean)^2
        mean = self._global_sum(tf.reduce_sum(xs, axis=self._reduce_axes), ctx, replicas) / n
        centered = xs - tf.reshape(mean, shape)
        variance = self._global_sum(tf.reduce_sum(centered * centered, axis=self._reduce_axes),
                                    ctx, replicas) / n
        mean, variance = tf.reshape(mean, half), tf.reshape(variance, half)
        self._update_moving(mean, variance * (n / max(n - 1.0, 1.0)))
        return tf.cast(self._affine(xs, tf.reshape(mean, shape), tf.reshape(variance, shape)),
                       x.dtype)

    @staticmethod
    def _global_sum(local: Any, ctx: Any, replicas: int) -> Any:
        return ctx.all_reduce("SUM", local) if replicas > 1 else local

    def _bessel_count(self, x: Any) -> int:
        shape = x.shape.as_list()
        n = 1
        for a in self._reduce_axes:
            if shape[a] is None:
                raise ValueError(f"SyncBatchNormalization {self.name!r}: training needs the "
                                 f"static size of the reduced axes, got input shape {x.shape}")
            n *= shape[a]
        return n
