"""Neural-network ops: activations, softmax, cross-entropies, bias_add, dropout.

Activations are primitives whose gradient is another primitive taking the forward output (or
input), as in TF (Relu -> ReluGrad); each gradient primitive has its own gradient, so second
derivatives work and traced backward passes stay small. Softmax and the softmax
cross-entropies are fused, numerically stable primitives. Normalization ops live in
``normalization_ops``; convolution and pooling in ``conv_ops``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import same_as_first
from tapeflow.kernels import activations as _activations
from tapeflow.kernels import bias as _bias
from tapeflow.kernels import dropout as _dropout_kernel
from tapeflow.kernels import layer_norm as _layer_norm
from tapeflow.kernels import scalar_math
from tapeflow.kernels import xent as _xent_kernel
from tapeflow.ops import math_ops
from tapeflow.ops.array_ops import expand_dims, reshape, transpose
from tapeflow.ops.conv_ops import as_tensor
from tapeflow.ops.normalization_ops import is_zero_gradient  # also registers tf.nn.moments ...
from tapeflow.ops.reduce_ops import reduce_sum

# --- ReLU family -------------------------------------------------------------------------------


@op("Relu", elementwise=True, shape=same_as_first, ufunc=(np.maximum, (0,)))
def _relu(x):
    return _activations.relu(x)


@op("ReluGrad", elementwise=True, shape=same_as_first, output="fresh_float", worker=True,
    scalar=(scalar_math.relu_grad, (0,)))
def _relu_grad(g, out):
    """g where the ReLU's output is positive, else 0 (the derivative at 0 is 0, as TF)."""
    return _activations.relu_grad(g, out)


@_relu.def_grad
def _(g, out, x):
    return apply(_relu_grad, g, out)


@_relu_grad.def_grad
def _(gg, dx, g, out):
    return apply(_relu_grad, gg, out), None


def _below_zero(v, out):
    """v where out <= 0, else 0 (v - ReluGrad(v, out)): the mask ELU-type gradients need."""
    return v - apply(_relu_grad, v, out)


@op("Relu6", elementwise=True, shape=same_as_first)
def _relu6(x):
    return np.clip(x, 0, 6)


@op("Relu6Grad", elementwise=True, shape=same_as_first)
def _relu6_grad(g, x):
    return np.where((x > 0) & (x < 6), g, 0).astype(g.dtype, copy=False)


@_relu6.def_grad
def _(g, out, x):
    return apply(_relu6_grad, g, x)


@_relu6_grad.def_grad
def _(gg, dx, g, x):
    return apply(_relu6_grad, gg, x), None


@op("LeakyRelu", shape=same_as_first)
def _leaky_relu(x, *, alpha):
    return np.where(x > 0, x, x * x.dtype.type(alpha))


@op("LeakyReluGrad", same_dtype=True, shape=same_as_first)
def _leaky_relu_grad(g, x, *, alpha):
    return np.where(x > 0, g, g * g.dtype.type(alpha))


@_leaky_relu.def_grad
def _(g, out, x, *, alpha):
    return apply(_leaky_relu_grad, g, x, alpha=alpha)


@_leaky_relu_grad.def_grad
def _(gg, dx, g, x, *, alpha):
    return apply(_leaky_relu_grad, gg, x, alpha=alpha), None


@op("Elu", elementwise=True, shape=same_as_first)
def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


@op("EluGrad", elementwise=True, shape=same_as_first)
def _elu_grad(g, out):
    """d elu = 1 for x > 0, else exp(x) = out + 1."""
    return np.where(out > 0, g, g * (out + 1))


@_elu.def_grad
def _(g, out, x):
    return apply(_elu_grad, g, out)


@_elu_grad.def_grad
def _(gg, dx, g, out):
    return apply(_elu_grad, gg, out), _below_zero(gg * g, out)


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@op("Selu", elementwise=True, shape=same_as_first)
def _selu(x):
    neg = SELU_ALPHA * np.expm1(np.minimum(x, 0))
    return (SELU_SCALE * np.where(x > 0, x, neg)).astype(x.dtype, copy=False)


@op("SeluGrad", elementwise=True, shape=same_as_first)
def _selu_grad(g, out):
    """d selu = scale for x > 0, else scale*alpha*exp(x) = out + scale*alpha."""
    dtype = g.dtype.type
    return np.where(out > 0, g * dtype(SELU_SCALE), g * (out + dtype(SELU_SCALE * SELU_ALPHA)))


@_selu.def_grad
def _(g, out, x):
    return apply(_selu_grad, g, out)


@_selu_grad.def_grad
def _(gg, dx, g, out):
    return apply(_selu_grad, gg, out), _below_zero(gg * g, out)


@op("Softplus", elementwise=True, shape=same_as_first)
def _softplus(x):
    return np.logaddexp(x, x.dtype.type(0))


@_softplus.def_grad
def _(g, out, x):
    return g * math_ops.sigmoid(x)


@export("nn.relu")
def relu(features: Any, name: str | None = None):
    """max(features, 0); the gradient at 0 is 0."""
    return apply(_relu, as_tensor(features))


@export("nn.relu6")
def relu6(features: Any, name: str | None = None):
    """min(max(features, 0), 6)."""
    return apply(_relu6, as_tensor(features))


@export("nn.leaky_relu")
def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None):
    """features where positive, alpha * features elsewhere."""
    return apply(_leaky_relu, as_tensor(features), alpha=float(alpha))


@export("nn.elu")
def elu(features: Any, name: str | None = None):
    """features where positive, exp(features) - 1 elsewhere."""
    return apply(_elu, as_tensor(features))


@export("nn.selu")
def selu(features: Any, name: str | None = None):
    """Scaled ELU with the self-normalizing constants of Klambauer et al. (2017)."""
    return apply(_selu, as_tensor(features))


@export("nn.softplus", "math.softplus")
def softplus(features: Any, name: str | None = None):
    """log(1 + exp(features)), computed without overflow."""
    return apply(_softplus, as_tensor(features))


@export("nn.softsign", "math.softsign")
def softsign(features: Any, name: str | None = None):
    """features / (1 + |features|)."""
    x = as_tensor(features)
    return x / (math_ops.abs(x) + 1)


@export("nn.gelu")
def gelu(features: Any, approximate: bool = False, name: str | None = None):
    """x * Phi(x); ``approximate=True`` uses the tanh form (as the original GELU paper)."""
    x = as_tensor(features)
    if approximate:
        c = float(np.sqrt(2 / np.pi))
        return 0.5 * x * (1 + math_ops.tanh(c * (x + 0.044715 * x * x * x)))
    return x * apply(_normal_cdf, x)


@op("NormalCdf", elementwise=True, shape=same_as_first)
def _normal_cdf(x):
    """Phi(x) = (1 + erf(x / sqrt 2)) / 2, with erf from the math library (exact)."""
    return np.asarray(0.5 * (1 + _erf(x / np.sqrt(2))), dtype=x.dtype)  # 0-d gives a float


_erf = np.frompyfunc(math.erf, 1, 1)


@_normal_cdf.def_grad
def _(g, out, x):
    return g * math_ops.exp(-0.5 * x * x) * float(1 / np.sqrt(2 * np.pi))


# --- softmax ---------------------------------------------------------------------------------


@op("Softmax", shape=lambda x, *, axis: x)
def _softmax(x, *, axis):
    if axis in (-1, x.ndim - 1):
        return _layer_norm.softmax(x)
    e = x - x.max(axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


@op("SoftmaxGrad", shape=lambda g, y: y, same_dtype=True, output="fresh")
def _softmax_grad(g, y):
    """(g - sum(g * y)) * y over the last axis, one compiled pass (``kernels/layer_norm``)."""
    return _layer_norm.softmax_grad(g, y)


@_softmax.def_grad
def _(g, y, x, *, axis):
    if axis in (-1, (x.shape.rank or 0) - 1) and not _state.tapes:
        return apply(_softmax_grad, g, y)
    return (g - reduce_sum(g * y, axis, keepdims=True)) * y


@op("LogSoftmax", shape=lambda x, *, axis: x)
def _log_softmax(x, *, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


@_log_softmax.def_grad
def _(g, out, x, *, axis):
    return g - reduce_sum(g, axis, keepdims=True) * math_ops.exp(out)


def _axis(x, axis: Any) -> int:
    axis = -1 if axis is None else int(axis)
    rank = x.shape.rank
    if rank is not None and not -rank <= axis < rank:
        raise errors.InvalidArgumentError(
            f"softmax: axis {axis} is out of range for a tensor of shape {x.shape}\n"
            f"{errors.user_line()}")
    return axis if rank is None else axis % rank


@export("nn.softmax", "math.softmax")
def softmax(logits: Any, axis: int | None = None, name: str | None = None):
    """exp(logits) / sum(exp(logits)) along `axis` (default last), stable for large logits."""
    x = as_tensor(logits)
    return apply(_softmax, x, axis=_axis(x, axis))


@export("nn.log_softmax", "math.log_softmax")
def log_softmax(logits: Any, axis: int | None = None, name: str | None = None):
    """logits - log(sum(exp(logits))) along `axis` (default last)."""
    x = as_tensor(logits)
    return apply(_log_softmax, x, axis=_axis(x, axis))


# --- softmax cross-entropies: fused (loss, backprop) primitives, as TF -------------------------


def _softmax_vjp(v, logits):
    sm = apply(_softmax, logits, axis=1)
    return (v - reduce_sum(v * sm, 1, keepdims=True)) * sm


def _sparse_xent_rule(logits, labels):
    ls, dtype = logits
    return [((None if ls is None else ls[0],), dtype), (ls, dtype)]


@op("SparseSoftmaxCrossEntropyWithLogits", multi_output=True, shape=_sparse_xent_rule)
def _sparse_xent(logits, labels):
    compiled = _xent_kernel.sparse_softmax_xent(logits, labels)
    if compiled is not None:
        return compiled
    n_classes = logits.shape[1]
    bad = (labels < 0) | (labels >= n_classes)
    if bad.any():
        raise errors.InvalidArgumentError(
            None, "SparseSoftmaxCrossEntropyWithLogits",
            f"Received a label value of {labels[bad][0]} which is outside the valid range of "
            f"[0, {n_classes}). Label values: {' '.join(map(str, labels.tolist()))}\n"
            f"{errors.user_line()}")
    s = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(s).sum(axis=1, keepdims=True))
    rows = np.arange(logits.shape[0])
    loss = lse[:, 0] - s[rows, labels]
    backprop = np.exp(s - lse)
    backprop[rows, labels] -= 1
    return loss, backprop


@_sparse_xent.def_grad
def _(gs, outs, logits, labels):
    g_loss, g_backprop = gs
    d_logits = expand_dims(g_loss, -1) * outs[1]
    if not is_zero_gradient(g_backprop):  # second order: backprop = softmax - onehot
        d_logits = d_logits + _softmax_vjp(g_backprop, logits)
    return d_logits, None


def _xent_rule(logits, labels):
    ls, dtype = logits
    return [((None if ls is None else ls[0],), dtype), (ls, dtype)]


@op("SoftmaxCrossEntropyWithLogits", multi_output=True, same_dtype=True, shape=_xent_rule)
def _xent(logits, labels):
    s = logits - logits.max(axis=1, keepdims=True)
    log_p = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
    loss = -(labels * log_p).sum(axis=1)
    # d loss / d logits = softmax * sum(labels) - labels (labels need not sum to 1)
    backprop = np.exp(log_p) * labels.sum(axis=1, keepdims=True) - labels
    return loss, backprop


@_xent.def_grad
def _(gs, outs, logits, labels):
    g_loss, g_backprop = gs
    g = expand_dims(g_loss, -1)
    d_logits = g * outs[1]
    d_labels = -g * apply(_log_softmax, logits, axis=1)
    if not is_zero_gradient(g_backprop):  # 2nd order: backprop = softmax*sum(labels) - labels
        sm = apply(_softmax, logits, axis=1)
        total = reduce_sum(labels, 1, keepdims=True)
        d_logits = d_logits + total * _softmax_vjp(g_backprop, logits)
        d_labels = d_labels + reduce_sum(g_backprop * sm, 1, keepdims=True) - g_backprop
    return d_logits, d_labels


def _rows_of(x):
    """Flatten leading dims so the classes axis is the second of a matrix."""
    return x if x.shape.rank == 2 else reshape(x, [-1, x.shape[-1]])


@export("nn.sparse_softmax_cross_entropy_with_logits")
def sparse_softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                             name: str | None = None):
    """-log softmax(logits)[label] per example; labels are class indices (int32/int64)."""
    logits, labels = as_tensor(logits), as_tensor(labels)
    name_ = "SparseSoftmaxCrossEntropyWithLogits"
    if labels.dtype.is_floating or not labels.dtype.is_integer:
        raise errors.InvalidArgumentError(
            f"{name_}: labels must be int32 or int64 class indices, got {labels.dtype.name}\n"
            f"{errors.user_line()}")
    if not logits.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"{name_}: logits must be float, got {logits.dtype.name}\n{errors.user_line()}")
    ls, lb = logits.shape, labels.shape
    if ls.rank is not None and lb.rank is not None and (
            ls.rank != lb.rank + 1 or not ls[:-1].is_compatible_with(lb)):
        raise errors.InvalidArgumentError(
            f"{name_}: logits must have the shape of labels plus a classes dim, got logits "
            f"{ls} and labels {lb}\n{errors.user_line()}")
    loss, _ = apply(_sparse_xent, _rows_of(logits),
                    labels if lb.rank == 1 else reshape(labels, [-1]))
    return loss if lb.rank == 1 else reshape(loss, [-1 if d is None else d for d in lb])


@export("nn.softmax_cross_entropy_with_logits")
def softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None, axis: int = -1,
                                      name: str | None = None):
    """-sum(labels * log softmax(logits)) along `axis`; gradients flow to logits and labels."""
    logits, labels = as_tensor(logits), as_tensor(labels)
    name_ = "SoftmaxCrossEntropyWithLogits"
    if labels.dtype != logits.dtype:
        labels = math_ops.cast(labels, logits.dtype)
    if not logits.shape.is_compatible_with(labels.shape):
        raise errors.InvalidArgumentError(
            f"{name_}: logits and labels must have the same shape, got logits {logits.shape} "
            f"and labels {labels.shape}\n{errors.user_line()}")
    rank = logits.shape.rank
    axis = _axis(logits, axis)
    if axis != rank - 1:
        perm = [i for i in range(rank) if i != axis] + [axis]
        logits, labels = transpose(logits, perm), transpose(labels, perm)
    batch = logits.shape.as_list()[:-1]
    loss, _ = apply(_xent, _rows_of(logits), _rows_of(labels))
    return loss if len(batch) == 1 else reshape(loss, [-1 if d is None else d for d in batch])


@op("SigmoidCrossEntropyWithLogits", same_dtype=True, shape=same_as_first)
def _sigmoid_xent(logits, labels):
    """max(x, 0) - x*z + log(1 + exp(-|x|)): no overflow for any x."""
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


@_sigmoid_xent.def_grad
def _(g, out, logits, labels):
    # NOTE: composing relu/abs would give the wrong gradient at x = 0 (their kinks cancel)
    return g * (math_ops.sigmoid(logits) - labels), -g * logits


@export("nn.sigmoid_cross_entropy_with_logits")
def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                      name: str | None = None):
    """Elementwise binary cross-entropy of sigmoid(logits) against labels in [0, 1]."""
    logits, labels = as_tensor(logits), as_tensor(labels)
    if labels.dtype != logits.dtype:
        labels = math_ops.cast(labels, logits.dtype)
    if not logits.shape.is_compatible_with(labels.shape):
        raise errors.InvalidArgumentError(
            f"SigmoidCrossEntropyWithLogits: logits and labels must have the same shape, got "
            f"logits {logits.shape} and labels {labels.shape}\n{errors.user_line()}")
    return apply(_sigmoid_xent, logits, labels)


# --- bias_add ---------------------------------------------------------------------------------


def _channel_axis(ndim: int, data_format: str) -> int:
    return 1 if data_format.startswith("NC") else ndim - 1


@op("BiasAdd", same_dtype=True, shape=lambda x, b, *, data_format: x, worker=True)
def _bias_add(x, b, *, data_format):
    axis = _channel_axis(x.ndim, data_format)
    if b.ndim != 1 or b.shape[0] != x.shape[axis]:
        raise ValueError(f"bias must be a vector of length {x.shape[axis]} (the channel dim of "
                         f"{data_format} input {list(x.shape)}), got shape {list(b.shape)}")
    return x + (b if axis == x.ndim - 1 else b.reshape((-1,) + (1,) * (x.ndim - 2)))


def _bias_grad_rule(g, *, data_format):
    gs, dtype = g
    return (None if gs is None else (gs[_channel_axis(len(gs), data_format)],)), dtype


@op("BiasAddGrad", shape=_bias_grad_rule, worker=True)
def _bias_add_grad(g, *, data_format):
    """Sum of the gradient over every axis but the channel axis."""
    axis = _channel_axis(g.ndim, data_format)
    if axis == g.ndim - 1:
        return _bias.channel_sums(g)
    return g.sum(axis=tuple(i for i in range(g.ndim) if i != axis))


@_bias_add.def_grad
def _(g, out, x, b, *, data_format):
    return g, apply(_bias_add_grad, g, data_format=data_format)


@_bias_add_grad.def_grad
def _(gg, db, g, *, data_format):
    rank = g.shape.rank
    if _channel_axis(rank, data_format) != rank - 1:
        gg = reshape(gg, [-1] + [1] * (rank - 2))
    return apply(math_ops._broadcast_like, gg, g)


@export("nn.bias_add")
def bias_add(value: Any, bias: Any, data_format: str | None = None, name: str | None = None):
    """value + bias along the channel axis (last for N...C, second for NC...)."""
    x, b = as_tensor(value), as_tensor(bias)
    data_format = data_format or "NHWC"
    if b.shape.rank is not None and b.shape.rank != 1:
        raise errors.InvalidArgumentError(
            f"BiasAdd: bias must be a vector, got shape {b.shape}\n{errors.user_line()}")
    if x.shape.rank is not None and b.shape.rank == 1:
        c = x.shape[_channel_axis(x.shape.rank, data_format)]
        if c is not None and b.shape[0] is not None and c != b.shape[0]:
            raise errors.InvalidArgumentError(
                f"BiasAdd: bias of shape {b.shape} does not match the channel dim ({c}) of "
                f"{data_format} input {x.shape}\n{errors.user_line()}")
    return apply(_bias_add, x, b, data_format=data_format)


# --- dropout ---------------------------------------------------------------------------------


def _mask_rule(like, *, rate, noise_shape, gen):
    shape, dtype = like
    if shape is None:
        return None, dtype
    return tuple(shape[i] if d == -1 else d for i, d in enumerate(noise_shape)), dtype


@op("DropoutMask", random=True, shape=_mask_rule)
def _dropout_mask(like, *, rate, noise_shape, gen):
    """1/(1-rate) with probability 1-rate, else 0; shaped like `like` where noise_shape is -1.

    An entry is kept when a 40-bit uniform integer u is >= cut = round(rate * 2**40), so the
    keep probability is 1 - rate to within 2**-41. Drawing a float per entry cost 64 random bits;
    here each entry gets one random byte (u's top 8 bits), and only the ~1/256 entries whose
    byte equals cut's top byte need u's other 32 bits, drawn afterwards for those entries alone.
    Raw bits from the seeded generator keep the mask repeatable under the same seeds.
    """
    shape = tuple(like.shape[i] if d == -1 else d for i, d in enumerate(noise_shape))
    size = math.prod(shape)
    raw = gen.bit_generator.random_raw
    cut = min(round(rate * 2.0**40), 2**40 - 1)
    top, rest = cut >> 32, cut & 0xFFFFFFFF
    first = raw(-(-size // 8)).view(np.uint8)[:size]
    dtype = like.dtype if like.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    scale = dtype.type(1.0 / (1.0 - rate))
    mask, ties = _dropout_kernel.mask(first, top, scale, dtype)  # one compiled pass
    if ties:
        extra = raw(-(-ties // 2)).view(np.uint32)[:ties]
        _dropout_kernel.settle(first, top, extra, rest, scale, mask)
    return mask.reshape(shape).astype(like.dtype, copy=False)


@export("nn.dropout")
def dropout(x: Any, rate: Any, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None):
    """Zero each entry with probability `rate` and scale the rest by 1/(1 - rate)."""
    from tapeflow.ops.random_ops import make_generator

    x = as_tensor(x)
    rate = float(rate.numpy() if hasattr(rate, "numpy") else rate)
    if not 0 <= rate < 1:
        raise errors.InvalidArgumentError(
            f"dropout: rate must be in [0, 1), got {rate}\n{errors.user_line()}")
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"dropout: x must be a float tensor, got {x.dtype.name}\n{errors.user_line()}")
    rank = x.shape.rank
    if noise_shape is None:
        noise = (-1,) * rank
    else:
        dims = noise_shape.numpy().tolist() if hasattr(noise_shape, "numpy") else noise_shape
        dims = list(dims.as_list() if hasattr(dims, "as_list") else dims)
        if len(dims) != rank:
            raise errors.InvalidArgumentError(
                f"dropout: noise_shape {dims} must have the rank of x {x.shape}\n"
                f"{errors.user_line()}")
        noise = tuple(-1 if d is None or d == x.shape[i] else int(d) for i, d in
                      enumerate(dims))
    mask = apply(_dropout_mask, x, rate=rate, noise_shape=noise, gen=make_generator(seed))
    return x * mask
