"""Normalization layers: BatchNormalization (batch statistics, moving averages), LayerNorm.

BatchNormalization updates its moving statistics with variable assign ops, so the update also
happens inside a traced ``tf.function`` (assigns are stateful: the executor keeps them).

``record_batch_statistics`` / ``replay_batch_statistics`` serve a pass that recomputes layers
on inputs it has seen before (RevNet's reversible backward pass rebuilds each block's input and
runs the block again): the recording pass keeps each channels-last layer's batch statistics;
the replay pass normalizes with them instead of recomputing them (one pass over the input
fewer) and leaves the moving averages alone (the recording pass updated them once).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.keras import initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error
from tapeflow.ops import normalization_ops


class BatchStatistics:
    """Per layer, the (mean, variance with Bessel's correction) of each training-mode call in a
    recording pass, taken back in the same order by a replay pass."""

    def __init__(self) -> None:
        self._by_layer: dict[int, list[tuple[Any, Any]]] = {}

    def record(self, layer: Layer, mean: Any, variance: Any) -> None:
        self._by_layer.setdefault(id(layer), []).append((mean, variance))

    def take(self, layer: Layer) -> tuple[Any, Any] | None:
        """The layer's oldest statistics not yet replayed, or None."""
        queue = self._by_layer.get(id(layer))
        return queue.pop(0) if queue else None


# (mode, statistics) while a record_batch_statistics / replay_batch_statistics block runs
_active: contextvars.ContextVar[tuple[str, BatchStatistics] | None] = contextvars.ContextVar(
    "batch_statistics", default=None)


@contextlib.contextmanager
def record_batch_statistics() -> Iterator[BatchStatistics]:
    """Record the batch statistics of every BatchNormalization call in training mode."""
    statistics = BatchStatistics()
    token = _active.set(("record", statistics))
    try:
        yield statistics
    finally:
        _active.reset(token)


@contextlib.contextmanager
def replay_batch_statistics(statistics: BatchStatistics) -> Iterator[None]:
    """Training-mode BatchNormalization calls normalize with their recorded statistics (the
    inputs must be the recorded pass's, up to rounding) and do not update moving averages; a
    layer with nothing left to replay computes its own as usual."""
    token = _active.set(("replay", statistics))
    try:
        yield
    finally:
        _active.reset(token)


def _normalize_axes(axis: Any, rank: int, layer: str) -> list[int]:
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise layer_error(f"{layer}: axis {a} is out of range for inputs of rank {rank}")
        out.append(a % rank)
    return sorted(set(out))


def _param_shape(input_shape: tf.TensorShape, axes: list[int], layer: str) -> tuple[int, ...]:
    dims = [input_shape[a] for a in axes]
    if any(d is None for d in dims):
        raise layer_error(f"{layer}: the normalized axes {axes} of the input shape {input_shape} "
                         "must be known")
    return tuple(int(d) for d in dims)


def _broadcast_param(p: Any, rank: int, axes: list[int]) -> Any:
    """Reshape a parameter of shape [dims at axes] so it broadcasts against the inputs."""
    if axes == [rank - 1]:
        return p
    shape = [1] * rank
    for a, d in zip(axes, p.shape.as_list()):
        shape[a] = d
    return tf.reshape(p, shape)


class BatchNormalization(Layer):
    """Normalize with the batch's statistics in training, moving averages at inference.

    ``moving = moving * momentum + batch_statistic * (1 - momentum)`` after each training call.
    As Keras's fused path does for 4-D inputs (and as PyTorch does), the moving variance is fed
    the unbiased batch variance (n / (n - 1)); normalization itself uses the biased one.
    Weights, in Keras's order: gamma, beta (trainable), moving_mean, moving_variance.
    """

    _passes_mask = True

    _cast_integer_inputs = True

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, synchronized: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise layer_error(f"BatchNormalization: momentum must be in [0, 1], got {momentum}")
        if epsilon <= 0:
            raise layer_error(f"BatchNormalization: epsilon must be positive, got {epsilon}")
        self.axis = axis
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.synchronized = bool(synchronized)  # statistics over all replicas (distribute)

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank is None:
            raise layer_error(f"BatchNormalization {self.name!r}: input rank must be known")
        self._axes = _normalize_axes(self.axis, shape.rank, "BatchNormalization")
        self._reduce_axes = [i for i in range(shape.rank) if i not in self._axes]
        param_shape = _param_shape(shape, self._axes, "BatchNormalization")
        self.gamma = self.add_weight("gamma", shape=param_shape,
                                     initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", shape=param_shape,
                                    initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", shape=param_shape,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape=param_shape,
                                               initializer=self.moving_variance_initializer,
                                               trainable=False)
        self.built = True

    def _affine(self, x: Any, mean: Any, variance: Any) -> Any:
        """gamma * (x - mean) / sqrt(variance + eps) + beta as one scale and one shift."""
        rank = x.shape.rank
        inv = tf.math.rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            inv = inv * _broadcast_param(self.gamma, rank, self._axes)
        shift = -mean * inv
        if self.beta is not None:
            shift = shift + _broadcast_param(self.beta, rank, self._axes)
        return x * inv + shift

    def call(self, inputs: Any, training: Any = None):
        x = tf.convert_to_tensor(inputs)
        rank = x.shape.rank
        if not training or not self.trainable:  # frozen: inference mode, as in Keras 2
            return self._affine(x, _broadcast_param(self.moving_mean, rank, self._axes),
                                _broadcast_param(self.moving_variance, rank, self._axes))
        if self.synchronized:
            from tapeflow.keras.layers.sync_batch_norm import synchronized_batch_norm

            return synchronized_batch_norm(self, x)
        if self._axes == [rank - 1]:  # channels last: one fused kernel for forward and backward
            shape = self.moving_mean.shape
            scale = self.gamma if self.gamma is not None else tf.ones(shape, x.dtype)
            offset = self.beta if self.beta is not None else tf.zeros(shape, x.dtype)
            active = _active.get()
            given = active[1].take(self) if active and active[0] == "replay" else None
            if given is not None:
                return apply(normalization_ops._fused_batch_norm, x, scale, offset, *given,
                             epsilon=self.epsilon)[0]
            out, mean, unbiased_variance = tf.nn.fused_batch_norm(
                x, scale, offset, epsilon=self.epsilon, is_training=True)
            if active and active[0] == "record":
                active[1].record(self, mean, unbiased_variance)
            self._update_moving(mean, unbiased_variance)
            return out
        mean, variance = tf.nn.moments(x, axes=self._reduce_axes, keepdims=True)
        stats_shape = self.moving_mean.shape.as_list()
        self._update_moving(tf.reshape(mean, stats_shape),
                            tf.reshape(variance, stats_shape) * self._bessel(x))
        return self._affine(x, mean, variance)

    def _bessel(self, x: Any) -> float:
        """n / (n - 1) for the n values that make up each batch statistic."""
        shape = x.shape.as_list()
        n = 1
        for a in self._reduce_axes:
            if shape[a] is None:
                raise layer_error(f"BatchNormalization {self.name!r}: training needs the static "
                                 f"size of the reduced axes, got input shape {x.shape}")
            n *= shape[a]
        return n / max(n - 1, 1)

    def _update_moving(self, mean: Any, variance: Any) -> None:
        """moving -= (moving - batch) * (1 - momentum), outside any gradient (once per step
        under a MirroredStrategy's replicas: with the mean of their statistics)."""
        from tapeflow.distribute.mirrored import mirrored_update

        agreed = mirrored_update([mean, variance])
        if agreed is None:
            return
        mean, variance = agreed
        decay = 1.0 - self.momentum
        self.moving_mean.assign_sub((self.moving_mean - tf.stop_gradient(mean)) * decay)
        self.moving_variance.assign_sub(
            (self.moving_variance - tf.stop_gradient(variance)) * decay)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                "synchronized": self.synchronized}


class LayerNormalization(Layer):
    """Normalize each example over `axis` (default the last) with a learned scale and shift."""

    _passes_mask = True

    _cast_integer_inputs = True

    def __init__(self, axis: Any = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = axis
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank is None:
            raise layer_error(f"LayerNormalization {self.name!r}: input rank must be known")
        self._axes = _normalize_axes(self.axis, shape.rank, "LayerNormalization")
        param_shape = _param_shape(shape, self._axes, "LayerNormalization")
        self.gamma = self.add_weight("gamma", shape=param_shape,
                                     initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", shape=param_shape,
                                    initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        self.built = True

    def call(self, inputs: Any):
        if isinstance(inputs, tf.RaggedTensor) and self._axes == [inputs.shape.rank - 1]:
            flat = inputs.flat_values  # each position on its own, as Keras
            return inputs.with_flat_values(self._normalize(flat, [flat.shape.rank - 1]))
        return self._normalize(tf.convert_to_tensor(inputs), self._axes)

    def _normalize(self, x: Any, axes: list) -> Any:
        rank = x.shape.rank
        if axes == [rank - 1] and x.dtype in (tf.float32, tf.float64) and all(
                v is None or v.dtype == x.dtype for v in (self.gamma, self.beta)):
            d = x.shape[-1]  # one fused op (ops/normalization_ops.layer_norm)
            gamma = tf.ones([d], x.dtype) if self.gamma is None else self.gamma
            beta = tf.zeros([d], x.dtype) if self.beta is None else self.beta
            return normalization_ops.layer_norm(x, gamma, beta, self.epsilon)
        mean, variance = tf.nn.moments(x, axes=axes, keepdims=True)
        out = (x - mean) * tf.math.rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            out = out * _broadcast_param(self.gamma, rank, axes)
        if self.beta is not None:
            out = out + _broadcast_param(self.beta, rank, axes)
        return out

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale}
