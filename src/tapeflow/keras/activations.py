"""Activation functions by name (``tf.keras.activations``): ``Dense(128, activation="relu")``.

Each is a thin composition of ``tf.nn`` / ``tf.math`` primitives, so gradients, graph tracing and
fusion come from the op library; nothing here has its own kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tapeflow as tf

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def linear(x: Any):
    """Identity: the activation of a layer given ``activation=None``."""
    return x


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None, threshold: float = 0.0):
    """max(x, 0); with `alpha` a leaky slope below `threshold`, with `max_value` a ceiling."""
    if alpha == 0.0 and max_value is None and threshold == 0.0:
        return tf.nn.relu(x)
    x = tf.convert_to_tensor(x)
    below = tf.nn.relu(threshold - x) if alpha else None
    if threshold:
        out = x * tf.cast(tf.math.greater(x, threshold), x.dtype)
    else:
        out = tf.nn.relu(x)
    if max_value is not None:
        out = tf.math.minimum(out, max_value)
    if below is not None:
        out = out - alpha * below
    return out


def sigmoid(x: Any):
    """1 / (1 + exp(-x))."""
    return tf.math.sigmoid(x)


def hard_sigmoid(x: Any):
    """Piecewise-linear sigmoid: clip(0.2 x + 0.5, 0, 1) (Keras 2's definition)."""
    x = tf.convert_to_tensor(x)
    return tf.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def tanh(x: Any):
    """Hyperbolic tangent."""
    return tf.math.tanh(x)


def softmax(x: Any, axis: int = -1):
    """exp(x) / sum(exp(x)) along `axis` (rank >= 2, as Keras requires)."""
    x = x if isinstance(x, tf.RaggedTensor) else tf.convert_to_tensor(x)
    if x.shape.rank is not None and x.shape.rank < 2:
        raise ValueError(f"softmax: cannot apply softmax to a tensor that is 1D (shape "
                         f"{x.shape}); Keras expects a batch dimension.")
    return tf.nn.softmax(x, axis=axis)


def log_softmax(x: Any, axis: int = -1):
    """log(softmax(x)), computed stably."""
    return tf.nn.log_softmax(x, axis=axis)


def elu(x: Any, alpha: float = 1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    out = tf.nn.elu(x)
    if alpha == 1.0:
        return out
    x = tf.convert_to_tensor(x)
    return tf.where(tf.math.greater(x, 0.0), out, alpha * out)


def selu(x: Any):
    """Scaled ELU with the self-normalising constants of Klambauer et al."""
    x = tf.convert_to_tensor(x)
    return _SELU_SCALE * tf.where(tf.math.greater(x, 0.0), x, _SELU_ALPHA * tf.nn.elu(x))


def softplus(x: Any):
    """log(1 + exp(x))."""
    return tf.math.softplus(x)


def softsign(x: Any):
    """x / (1 + |x|)."""
    x = tf.convert_to_tensor(x)
    return x / (1.0 + tf.abs(x))


def swish(x: Any):
    """x * sigmoid(x) (also called SiLU)."""
    x = tf.convert_to_tensor(x)
    return x * tf.math.sigmoid(x)


silu = swish


def gelu(x: Any, approximate: bool = False):
    """Gaussian error linear unit: x * Phi(x) (tanh approximation if `approximate`)."""
    return tf.nn.gelu(x, approximate=approximate)


def mish(x: Any):
    """x * tanh(softplus(x)) (Misra 2019): smooth, non-monotonic, unbounded above."""
    x = tf.convert_to_tensor(x)
    return x * tf.math.tanh(tf.math.softplus(x))


def exponential(x: Any):
    """exp(x)."""
    return tf.exp(x)


_BY_NAME: dict[str, Callable] = {
    f.__name__: f for f in (linear, relu, sigmoid, hard_sigmoid, tanh, softmax, log_softmax, elu,
                            selu, softplus, softsign, swish, gelu, mish, exponential)
}
_BY_NAME["silu"] = swish


def serialize(activation: Callable) -> str:
    """The registered name of `activation` (what a layer config stores)."""
    for name, fn in _BY_NAME.items():
        if fn is activation:
            return name
    raise ValueError(f"activations.serialize: {activation!r} is not a registered activation")


def deserialize(name: str) -> Callable:
    """The activation function registered as `name`."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"Unknown activation function: {name!r}. Known names: "
                         f"{sorted(_BY_NAME)}") from None


def get(identifier: Any) -> Callable:
    """An activation from a name, None (linear) or a callable."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return deserialize(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier.get("class_name") or identifier["config"]["name"])
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r}")
