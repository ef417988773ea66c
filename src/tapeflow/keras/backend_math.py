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


def random_normal_variable(shape: Any, mean: float, scale: float, dtype: Any = None,
                           name: str | None = None, seed: int | None = None) -> Any:
    return tf.Variable(random_normal(shape, mean, scale, dtype, seed), name=name)


def random_uniform_variable(shape: Any, low: float, high: float, dtype: Any = None,
                            name: str | None = None, seed: int | None = None) -> Any:
    return tf.Variable(random_uniform(shape, low, high, dtype, seed), name=name)


def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                     seed: int | None = None) -> Any:
    return tf.random.truncated_normal(shape, mean=mean, stddev=stddev,
                                      dtype=dtype or backend.floatx(), seed=seed)


def random_bernoulli(shape: Any, p: float = 0.0, dtype: Any = None,
                     seed: int | None = None) -> Any:
    """1 with probability `p`, else 0."""
    dtype = dtype or backend.floatx()
    return tf.cast(random_uniform(shape, dtype=dtype, seed=seed) <= p, dtype)


random_binomial = random_bernoulli


# --- elementwise and shape functions -----------------------------------------------------------
def cos(x: Any) -> Any:
    return tf.cos(x)


def sin(x: Any) -> Any:
    return tf.sin(x)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """ELU with Keras's `alpha` scaling of the negative part."""
    out = tf.nn.elu(x)
    return out if alpha == 1 else tf.where(x > 0, out, alpha * out)


def softsign(x: Any) -> Any:
    return tf.nn.softsign(x)


def hard_sigmoid(x: Any) -> Any:
    """clip(0.2 x + 0.5, 0, 1), Keras 2's piecewise-linear sigmoid."""
    x = tf.convert_to_tensor(x)
    return tf.clip_by_value(0.2 * x + 0.5, 0.0, 1.0)


def greater_equal(x: Any, y: Any) -> Any:
    return tf.greater_equal(x, y)


def less_equal(x: Any, y: Any) -> Any:
    return tf.less_equal(x, y)


def stop_gradient(variables: Any) -> Any:
    if isinstance(variables, (list, tuple)):
        return [tf.stop_gradient(v) for v in variables]
    return tf.stop_gradient(variables)


def cumsum(x: Any, axis: int = 0) -> Any:
    return tf.math.cumsum(x, axis=axis)


def cumprod(x: Any, axis: int = 0) -> Any:
    return tf.math.cumprod(x, axis=axis)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = "int32") -> Any:
    if stop is None and start < 0:
        start = 0
    return tf.cast(tf.range(start, limit=stop, delta=step), dtype)


def eye(size: Any, dtype: Any = None, name: str | None = None) -> Any:
    return tf.Variable(np.eye(size, dtype=dtype or backend.floatx()), name=name)


def one_hot(indices: Any, num_classes: int) -> Any:
    return tf.one_hot(indices, depth=num_classes, axis=-1)


def cast_to_floatx(x: Any) -> Any:
    """`x` as a NumPy array (or tensor) of ``floatx()``."""
    if isinstance(x, (tf.Tensor, tf.Variable)):
        return tf.cast(x, backend.floatx())
    return np.asarray(x, dtype=backend.floatx())


def permute_dimensions(x: Any, pattern: Any) -> Any:
    return tf.transpose(x, perm=pattern)


def repeat(x: Any, n: int) -> Any:
    """(batch, dim) -> (batch, n, dim)."""
    if len(x.shape) != 2:
        raise ValueError(f"repeat: expected a 2D tensor, got shape {x.shape}")
    return tf.tile(tf.expand_dims(x, 1), [1, n, 1])


def repeat_elements(x: Any, rep: int, axis: int) -> Any:
    return tf.repeat(x, rep, axis=axis)


def reverse(x: Any, axes: Any) -> Any:
    return tf.reverse(x, [axes] if isinstance(axes, int) else list(axes))


def tile(x: Any, n: Any) -> Any:
    return tf.tile(x, [n] if isinstance(n, int) else list(n))


def temporal_padding(x: Any, padding: tuple = (1, 1)) -> Any:
    """Zeros before and after the time axis of a (batch, time, features) tensor."""
    return tf.pad(x, [[0, 0], list(padding), [0, 0]])


def spatial_2d_padding(x: Any, padding: tuple = ((1, 1), (1, 1)),
                       data_format: str | None = None) -> Any:
    if (data_format or backend.image_data_format()) == "channels_first":
        return tf.pad(x, [[0, 0], [0, 0], list(padding[0]), list(padding[1])])
    return tf.pad(x, [[0, 0], list(padding[0]), list(padding[1]), [0, 0]])


def resize_images(x: Any, height_factor: int, width_factor: int, data_format: str,
                  interpolation: str = "nearest") -> Any:
    """Upsample a 4D batch by integer factors."""
    if data_format == "channels_first":
        x = tf.transpose(x, [0, 2, 3, 1])
    h, w = x.shape[1], x.shape[2]
    out = tf.image.resize(x, [h * height_factor, w * width_factor], method=interpolation)
    out = tf.cast(out, x.dtype)
    return tf.transpose(out, [0, 3, 1, 2]) if data_format == "channels_first" else out


def batch_dot(x: Any, y: Any, axes: Any = None) -> Any:
    """Per-sample dot product of `x` and `y` along `axes` (Keras's rules: by default the last
    axis of x with the second-to-last of y, or the last of y when it is 2D); two 2D inputs give
    (batch, 1)."""
    x, y = tf.convert_to_tensor(x), tf.convert_to_tensor(y)
    xn, yn = len(x.shape), len(y.shape)
    if xn < 2 or yn < 2:
        raise ValueError(f"batch_dot requires inputs of rank >= 2; got shapes {x.shape} and "
                         f"{y.shape}")
    if axes is None:
        axes = (xn - 1, yn - 1 if yn == 2 else yn - 2)
    elif isinstance(axes, int):
        axes = (axes, axes)
    ax, ay = (a % n for a, n in zip(axes, (xn, yn)))
    if ax == 0 or ay == 0:
        raise ValueError("batch_dot cannot contract the batch axis (axes must not be 0)")
    letters = "bcdefghijklmnopqrstuvwxyz"
    xs = ["a"] + [letters[i - 1] for i in range(1, xn)]
    ys = ["a"] + [letters[xn - 1 + i - 1] for i in range(1, yn)]
    ys[ay] = xs[ax]
    out = [d for d in xs if d != xs[ax]] + [d for i, d in enumerate(ys) if i not in (0, ay)]
    result = tf.einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
    return tf.expand_dims(result, 1) if len(out) == 1 else result


def bias_add(x: Any, bias: Any, data_format: str | None = None) -> Any:
    fmt = "NCHW" if (data_format or backend.image_data_format()) == "channels_first" and \
        len(x.shape) == 4 else None
    return tf.nn.bias_add(x, bias, data_format=fmt)


def batch_normalization(x: Any, mean: Any, var: Any, beta: Any, gamma: Any, axis: int = -1,
                        epsilon: float = 1e-3) -> Any:
    return tf.nn.batch_normalization(x, mean, var, beta, gamma, epsilon)


def moving_average_update(x: Any, value: Any, momentum: float) -> Any:
    """x <- x * momentum + value * (1 - momentum) (Keras 2's zero-debias-free update)."""
    return x.assign(x * momentum + tf.cast(value, x.dtype) * (1.0 - momentum))


def update(x: Any, new_x: Any) -> Any:
    return x.assign(new_x)


def update_add(x: Any, increment: Any) -> Any:
    return x.assign_add(increment)


def update_sub(x: Any, decrement: Any) -> Any:
    return x.assign_sub(decrement)


def dropout(x: Any, level: float, noise_shape: Any = None, seed: int | None = None) -> Any:
    return tf.nn.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


def in_top_k(predictions: Any, targets: Any, k: int) -> Any:
    return tf.math.in_top_k(targets, predictions, k)


def conv1d(x: Any, kernel: Any, strides: int = 1, padding: str = "valid",
           data_format: str | None = None, dilation_rate: int = 1) -> Any:
    _channels_last(data_format, "conv1d")
    if padding == "causal":
        x = temporal_padding(x, ((kernel.shape[0] - 1) * dilation_rate, 0))
        padding = "valid"
    return tf.nn.conv1d(x, kernel, strides, padding.upper(), dilations=dilation_rate)


def conv2d(x: Any, kernel: Any, strides: tuple = (1, 1), padding: str = "valid",
           data_format: str | None = None, dilation_rate: tuple = (1, 1)) -> Any:
    _channels_last(data_format, "conv2d")
    return tf.nn.conv2d(x, kernel, strides, padding.upper(), dilations=dilation_rate)


def conv2d_transpose(x: Any, kernel: Any, output_shape: Any, strides: tuple = (1, 1),
                     padding: str = "valid", data_format: str | None = None,
                     dilation_rate: tuple = (1, 1)) -> Any:
    _channels_last(data_format, "conv2d_transpose")
    return tf.nn.conv2d_transpose(x, kernel, output_shape, strides, padding.upper(),
                                  dilations=dilation_rate)


def pool2d(x: Any, pool_size: tuple, strides: tuple = (1, 1), padding: str = "valid",
           data_format: str | None = None, pool_mode: str = "max") -> Any:
    _channels_last(data_format, "pool2d")
    if pool_mode not in ("max", "avg"):
        raise ValueError(f"Invalid pool_mode: {pool_mode}")
    pool = tf.nn.max_pool2d if pool_mode == "max" else tf.nn.avg_pool2d
    return pool(x, pool_size, strides, padding.upper())


def _channels_last(data_format: str | None, name: str) -> None:
    if (data_format or backend.image_data_format()) != "channels_last":
        raise ValueError(f"backend.{name}: only data_format='channels_last' is supported, got "
                         f"{data_format!r}")


def to_dense(tensor: Any) -> Any:
    return tf.sparse.to_dense(tensor) if is_sparse(tensor) else tensor


def is_sparse(tensor: Any) -> bool:
    return type(tensor).__name__ == "SparseTensor"


def print_tensor(x: Any, message: str = "", summarize: int = 3) -> Any:
    """Print `message` and the value of `x` when it is computed; returns `x`."""
    tf.print(message, x, summarize=summarize)
    return x


def map_fn(fn: Any, elems: Any, name: str | None = None, dtype: Any = None) -> Any:
    return tf.map_fn(fn, elems, dtype=dtype)


def foldl(fn: Any, elems: Any, initializer: Any = None, name: str | None = None) -> Any:
    return tf.foldl(fn, elems, initializer=initializer)


def foldr(fn: Any, elems: Any, initializer: Any = None, name: str | None = None) -> Any:
    return tf.foldr(fn, elems, initializer=initializer)


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """`x` when training (the argument, else the learning phase), else `alt`; callables are
    called."""
    if training is None:
        training = backend.learning_phase()
    chosen = x if training in (1, True) else alt
    return chosen() if callable(chosen) else chosen


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return in_train_phase(alt, x, training=training)


def name_scope(name: str) -> Any:
    return tf.name_scope(name)
