"""The tensor functions of ``tf.keras.backend`` (``K.mean``, ``K.square``, ``K.clip`` ...) that
custom losses and layers written for Keras 2 call, with Keras's argument names and defaults.

``backend.py`` holds Keras's session state and loads this module on the first access of one of
these names (it imports the op library, which the engine's early imports must not).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras import backend


def _reduce(fn: Any) -> Any:
    def reduce(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return fn(x, axis=axis, keepdims=keepdims)

    reduce.__doc__ = f"Keras's reduction over `axis` (all axes when None) with {fn.__name__}."
    return reduce


mean = _reduce(tf.reduce_mean)
sum = _reduce(tf.reduce_sum)  # noqa: A001  (Keras's name)
max = _reduce(tf.reduce_max)  # noqa: A001
min = _reduce(tf.reduce_min)  # noqa: A001
prod = _reduce(tf.reduce_prod)
std = _reduce(tf.math.reduce_std)
var = _reduce(tf.math.reduce_variance)
any = _reduce(tf.reduce_any)  # noqa: A001
all = _reduce(tf.reduce_all)  # noqa: A001


def square(x: Any) -> Any:
    return tf.square(x)


def sqrt(x: Any) -> Any:
    """Square root with negative inputs clipped to 0, as Keras does."""
    x = tf.convert_to_tensor(x)
    return tf.sqrt(tf.maximum(x, tf.zeros_like(x)))


def abs(x: Any) -> Any:  # noqa: A001
    return tf.abs(x)


def exp(x: Any) -> Any:
    return tf.exp(x)


def log(x: Any) -> Any:
    return tf.math.log(x)


def pow(x: Any, a: Any) -> Any:  # noqa: A001
    return tf.pow(x, a)


def clip(x: Any, min_value: Any, max_value: Any) -> Any:
    """`x` clipped to [min_value, max_value] (a max below the min is raised to it)."""
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    if max_value is None:
        max_value = np.inf
    if min_value is None:
        min_value = -np.inf
    x = tf.convert_to_tensor(x)
    return tf.clip_by_value(x, tf.cast(min_value, x.dtype), tf.cast(max_value, x.dtype))


def maximum(x: Any, y: Any) -> Any:
    return tf.maximum(x, y)


def minimum(x: Any, y: Any) -> Any:
    return tf.minimum(x, y)


def round(x: Any) -> Any:  # noqa: A001
    return tf.round(x)


def sign(x: Any) -> Any:
    return tf.sign(x)


def cast(x: Any, dtype: Any) -> Any:
    return tf.cast(x, dtype)


def dtype(x: Any) -> str:
    """The dtype name of `x` (``'float32'``)."""
    return x.dtype.name


def shape(x: Any) -> Any:
    """The run-time shape of `x` as an int32 tensor."""
    return tf.shape(x)


def ndim(x: Any) -> int | None:
    return x.shape.rank


def reshape(x: Any, shape: Any) -> Any:
    return tf.reshape(x, shape)


def flatten(x: Any) -> Any:
    return tf.reshape(x, [-1])


def batch_flatten(x: Any) -> Any:
    """(batch, ...) -> (batch, prod(...))."""
    return tf.reshape(x, tf.stack([tf.shape(x)[0], -1]))


def expand_dims(x: Any, axis: int = -1) -> Any:
    return tf.expand_dims(x, axis)


def squeeze(x: Any, axis: int) -> Any:
    return tf.squeeze(x, [axis])


def concatenate(tensors: list, axis: int = -1) -> Any:
    return tf.concat(tensors, axis)


def stack(x: list, axis: int = 0) -> Any:
    return tf.stack(x, axis=axis)


def dot(x: Any, y: Any) -> Any:
    """Matrix product over the last axis of `x` and the second-to-last of `y`."""
    return tf.matmul(x, y)


def transpose(x: Any) -> Any:
    return tf.transpose(x)


def gather(reference: Any, indices: Any) -> Any:
    return tf.gather(reference, indices)


def argmax(x: Any, axis: int = -1) -> Any:
    return tf.argmax(x, axis)


def argmin(x: Any, axis: int = -1) -> Any:
    return tf.argmin(x, axis)


def equal(x: Any, y: Any) -> Any:
    return tf.equal(x, y)


def not_equal(x: Any, y: Any) -> Any:
    return tf.not_equal(x, y)


def greater(x: Any, y: Any) -> Any:
    return tf.greater(x, y)


def less(x: Any, y: Any) -> Any:
    return tf.less(x, y)


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Any:
    """Elementwise choice between two tensors (``tf.where``)."""
    return tf.where(condition, then_expression, else_expression)


def softmax(x: Any, axis: int = -1) -> Any:
    return tf.nn.softmax(x, axis=axis)


def relu(x: Any, alpha: float = 0.0, max_value: Any = None, threshold: float = 0.0) -> Any:
    from tapeflow.keras import activations

    return activations.relu(x, alpha=alpha, max_value=max_value, threshold=threshold)


def sigmoid(x: Any) -> Any:
    return tf.sigmoid(x)


def tanh(x: Any) -> Any:
    return tf.tanh(x)


def softplus(x: Any) -> Any:
    return tf.nn.softplus(x)


def l2_normalize(x: Any, axis: Any = None) -> Any:
    return tf.math.l2_normalize(x, axis=axis)


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Any:
    """Elementwise binary cross-entropy (not averaged), as Keras's backend computes it."""
    from tapeflow.keras import losses

    return losses.binary_crossentropy(tf.expand_dims(target, -1), tf.expand_dims(output, -1),
                                      from_logits=from_logits)


def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                             axis: int = -1) -> Any:
    from tapeflow.keras import losses

    return losses.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                                    axis: int = -1) -> Any:
    from tapeflow.keras import losses

    return losses.sparse_categorical_crossentropy(target, output, from_logits=from_logits,
                                                  axis=axis)


def zeros(shape: Any, dtype: Any = None, name: str | None = None) -> Any:
    return tf.zeros(shape, dtype=dtype or backend.floatx())


def ones(shape: Any, dtype: Any = None, name: str | None = None) -> Any:
    return tf.ones(shape, dtype=dtype or backend.floatx())


def zeros_like(x: Any, dtype: Any = None, name: str | None = None) -> Any:
    return tf.zeros_like(x, dtype=dtype)


def ones_like(x: Any, dtype: Any = None, name: str | None = None) -> Any:
    return tf.ones_like(x, dtype=dtype)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Any:
    return tf.constant(value, dtype=dtype or backend.floatx(), shape=shape)


def variable(value: Any, dtype: Any = None, name: str | None = None,
             constraint: Any = None) -> Any:
    return tf.Variable(np.asarray(value, dtype=dtype or backend.floatx()), name=name,
                       constraint=constraint)


def eval(x: Any) -> np.ndarray:  # noqa: A001
    """The NumPy value of a tensor or variable."""
    return np.asarray(x)


def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                  seed: int | None = None) -> Any:
    return tf.random.normal(shape, mean=mean, stddev=stddev, dtype=dtype or backend.floatx(),
                            seed=seed)


def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None,
                   seed: int | None = None) -> Any:
    return tf.random.uniform(shape, minval=minval, maxval=maxval,
                             dtype=dtype or backend.floatx(), seed=seed)
