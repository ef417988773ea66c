"""Normalization: moments, batch_normalization, l2_normalize and the fused training batch norm.

``layer_norm`` (what LayerNormalization over the last axis calls) is the primitive _LayerNorm,
one compiled pass per row forward and one backward (_LayerNormGrad).

``moments``/``batch_normalization``/``l2_normalize`` are compositions of math ops, so every
mode and derivative order comes for free. ``fused_batch_norm`` (what a BatchNormalization layer
should call in training) is one primitive, FusedBatchNorm, computing y and the batch statistics
in two passes over x; its gradient is the fused FusedBatchNormGrad primitive, or, when some
tape is recording the backward pass (higher-order gradients), the same formula written in
differentiable ops.
"""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import EagerTensor
from tapeflow.kernels import batch_norm as _bn
from tapeflow.kernels import layer_norm as _ln
from tapeflow.kernels.low_precision import widened
from tapeflow.ops import math_ops
from tapeflow.ops.array_ops import transpose
from tapeflow.ops.conv_ops import as_tensor
from tapeflow.ops.reduce_ops import normalize_axes, reduce_mean, reduce_sum


@export("nn.moments")
def moments(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
            name: str | None = None):
    """(mean, variance) of `x` over `axes`; the variance is the biased (population) one."""
    x = as_tensor(x)
    axes = list(normalize_axes(axes, x.shape.rank))
    mean = reduce_mean(x, axes, keepdims=True)
    centred = x - mean  # NOTE: stop_gradient(mean) here (as TF) breaks second derivatives
    variance = reduce_mean(centred * centred, axes, keepdims=keepdims)
    if not keepdims:
        mean = reduce_mean(x, axes, keepdims=False)
    return mean, variance


@export("nn.batch_normalization")
def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: float, name: str | None = None):
    """(x - mean) * scale / sqrt(variance + eps) + offset, as one scale and one shift of x
    (computed in the statistics' dtype and cast to x's, as TF)."""
    x = as_tensor(x)
    inv = math_ops.rsqrt(as_tensor(variance) + variance_epsilon)
    if scale is not None:
        inv = inv * as_tensor(scale)
    shift = -as_tensor(mean) * inv
    if offset is not None:
        shift = shift + as_tensor(offset)
    if inv.dtype != x.dtype:
        inv, shift = math_ops.cast(inv, x.dtype), math_ops.cast(shift, x.dtype)
    return x * inv + shift


@export("nn.l2_normalize", "math.l2_normalize", "linalg.l2_normalize")
def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: Any = None):
    """x / sqrt(max(sum(x**2, axis), epsilon))."""
    x = as_tensor(x)
    axis = dim if axis is None else axis
    sq = reduce_sum(x * x, axis, keepdims=True)
    return x * math_ops.rsqrt(math_ops.maximum(sq, epsilon))


# --- fused training batch norm ------------------------------------------------------------------


def _fused_rule(x, scale, offset, *given, epsilon):
    xs, dtype = x
    c = (None if xs is None else xs[-1],)
    return [(xs, dtype), (c, dtype), (c, dtype), (c, dtype)]


def check_parameters(x, scale, offset, given) -> None:
    """Scale, offset and any given statistics are vectors of x's channel count."""
    c = x.shape[-1]
    if scale.shape != (c,) or offset.shape != (c,):
        raise ValueError(f"scale and offset must be vectors of the channel count {c}, got "
                         f"{list(scale.shape)} and {list(offset.shape)}")
    if len(given) not in (0, 2) or any(v.shape != (c,) for v in given):
        raise ValueError(f"the given statistics must be a mean and a variance of the channel "
                         f"count {c}, got shapes {[list(v.shape) for v in given]}")


@op("FusedBatchNorm", multi_output=True, same_dtype=True, shape=_fused_rule, worker=True)
@widened
def _fused_batch_norm(x, scale, offset, *given, epsilon):
    """(y, batch mean, batch variance with Bessel's correction, 1/sqrt(biased var + eps)).

    `given`: x's own batch (mean, variance with Bessel's correction), known from an earlier
    pass over the same values (a RevNet recompute replays them): the statistics are not
    recomputed, and the gradient is still training mode's (statistics as functions of x)."""
    check_parameters(x, scale, offset, given)
    return _bn.forward(x, scale, offset, epsilon, given=given)


def _fused_grad_rule(g, x, scale, mean, inv):
    return [x, scale, scale]


@op("FusedBatchNormGrad", multi_output=True, same_dtype=True, shape=_fused_grad_rule,
    worker=True)
@widened
def _fused_batch_norm_grad(g, x, scale, mean, inv):
    """(dx, dscale, doffset) of FusedBatchNorm's y."""
    return _bn.backward(g, x, scale, mean, inv)


def is_zero_gradient(t) -> bool:
    """True for the zeros a tape fills in for an unused output (eager value or ZerosLike node),
    so multi-output gradients skip terms that would only add zeros."""
    if type(t) is EagerTensor:
        return not t._value.any()
    node = getattr(t, "node", None)
    return node is not None and node.op.name in ("ZerosLike", "Fill") and (
        node.op.name == "ZerosLike" or node.attrs.get("value") == 0)


def _reduce_axes(x) -> list[int]:
    return list(range(x.shape.rank - 1))


def _backward_in_ops(g, x, scale, epsilon: float):
    """FusedBatchNormGrad written in differentiable ops (for higher-order gradients)."""
    axes = _reduce_axes(x)
    mean, var = moments(x, axes, keepdims=True)
    inv = math_ops.rsqrt(var + epsilon)
    xhat = (x - mean) * inv
    dx = scale * inv * (g - reduce_mean(g, axes, keepdims=True)
                        - xhat * reduce_mean(g * xhat, axes, keepdims=True))
    return dx, reduce_sum(g * xhat, axes), reduce_sum(g, axes)


def statistics_gradient(g_mean, g_var, x, mean):
    """The gradient of x through FusedBatchNorm's batch mean and Bessel-corrected variance
    outputs (the moving averages read them), or None when neither was used."""
    if is_zero_gradient(g_mean) and is_zero_gradient(g_var):
        return None
    r = math_ops._size_ratio(mean, x)  # 1 / rows
    return g_mean * r + g_var * (2.0 * (x - mean)) * (r / (1.0 - r))


@_fused_batch_norm.def_grad
def _(gs, outs, x, scale, offset, *given, epsilon):
    gy, g_mean, g_var, _ = gs
    _, mean, _, inv = outs
    if _state.tapes:
        dx, dscale, doffset = _backward_in_ops(gy, x, scale, epsilon)
    else:
        dx, dscale, doffset = apply(_fused_batch_norm_grad, gy, x, scale, mean, inv)
    if given:  # the statistics outputs pass the given ones through
        return dx, dscale, doffset, g_mean, g_var
    through_statistics = statistics_gradient(g_mean, g_var, x, mean)
    if through_statistics is not None:
        dx = dx + through_statistics
    return dx, dscale, doffset


@export("nn.fused_batch_norm", "compat.v1.nn.fused_batch_norm")
def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
                     name: str | None = None, exponential_avg_factor: float = 1.0):
    """Batch norm over all axes but the channels: (y, mean, variance).

    Training: the batch statistics normalize x; the returned variance has Bessel's correction
    (n/(n-1)), as TF's, and with ``exponential_avg_factor`` f < 1 the returned statistics are
    (1-f)*given + f*batch (the moving averages). Inference: the given mean/variance are used.
    """
    x, scale, offset = as_tensor(x), as_tensor(scale), as_tensor(offset)
    if data_format not in ("NHWC", "NCHW"):
        raise errors.InvalidArgumentError(
            f"FusedBatchNorm: data_format must be 'NHWC' or 'NCHW', got {data_format!r}\n"
            f"{errors.user_line()}")
    if x.shape.rank is not None and x.shape.rank < 2:
        raise errors.InvalidArgumentError(
            f"FusedBatchNorm: x must have a batch and a channel dim, got shape {x.shape}\n"
            f"{errors.user_line()}")
    nchw = data_format == "NCHW"
    if nchw:
        rank = x.shape.rank
        x = transpose(x, [0] + list(range(2, rank)) + [1])
    if not is_training:
        if mean is None or variance is None:
            raise errors.InvalidArgumentError(
                f"FusedBatchNorm: inference (is_training=False) needs mean and variance\n"
                f"{errors.user_line()}")
        mean, variance = as_tensor(mean), as_tensor(variance)
        y = batch_normalization(x, mean, variance, offset, scale, epsilon)
    else:
        y, batch_mean, batch_var, _ = apply(_fused_batch_norm, x, scale, offset,
                                            epsilon=float(epsilon))
        f = float(exponential_avg_factor)
        if f != 1.0 and mean is not None and variance is not None:
            mean = as_tensor(mean) * (1.0 - f) + batch_mean * f
            variance = as_tensor(variance) * (1.0 - f) + batch_var * f
        else:
            mean, variance = batch_mean, batch_var
    if nchw:
        rank = y.shape.rank
        y = transpose(y, [0, rank - 1] + list(range(1, rank - 1)))
    return y, mean, variance


# --- fused layer normalization over the last axis -----------------------------------------------


def _layer_norm_rule(x, gamma, beta, *, epsilon):
    xs, dtype = x
    lead = None if xs is None else xs[:-1]
    return [(xs, dtype), (lead, dtype), (lead, dtype)]


def _check_layer_norm(x, gamma, beta) -> None:
    d = x.shape[-1] if x.ndim else None
    if d is None or gamma.shape != (d,) or beta.shape != (d,):
        raise ValueError(f"_LayerNorm: gamma and beta must be vectors of x's last dimension "
                         f"{d}, got {list(gamma.shape)} and {list(beta.shape)} for x "
                         f"{list(x.shape)}")


@op("_LayerNorm", multi_output=True, same_dtype=True, shape=_layer_norm_rule, worker=True)
@widened
def _layer_norm(x, gamma, beta, *, epsilon):
    """(y, mean, 1/sqrt(var + epsilon)) over x's last axis, y scaled by gamma, shifted by beta
    (``kernels/layer_norm.py``)."""
    _check_layer_norm(x, gamma, beta)
    return _ln.forward(x, gamma, beta, epsilon)


def _layer_norm_grad_rule(g, x, gamma, mean, inv):
    return [x, gamma, gamma]


@op("_LayerNormGrad", multi_output=True, same_dtype=True, shape=_layer_norm_grad_rule,
    worker=True)
@widened
def _layer_norm_grad(g, x, gamma, mean, inv):
    """(dx, dgamma, dbeta) of ``_LayerNorm``'s y."""
    return _ln.backward(g, x, gamma, mean, inv)


def _layer_norm_backward_in_ops(g, x, gamma, epsilon: float):
    """``_LayerNormGrad`` written in differentiable ops (for higher-order gradients)."""
    mean, var = moments(x, [-1], keepdims=True)
    inv = math_ops.rsqrt(var + epsilon)
    xhat = (x - mean) * inv
    dxhat = g * gamma
    dx = inv * (dxhat - reduce_mean(dxhat, -1, keepdims=True)
                - xhat * reduce_mean(dxhat * xhat, -1, keepdims=True))
    lead = list(range(x.shape.rank - 1))
    return dx, reduce_sum(g * xhat, lead), reduce_sum(g, lead)


@_layer_norm.def_grad
def _(gs, outs, x, gamma, beta, *, epsilon):
    _, mean, inv = outs  # the statistics are internal: their gradients are never asked for
    if _state.tapes:
        return _layer_norm_backward_in_ops(gs[0], x, gamma, epsilon)
    return apply(_layer_norm_grad, gs[0], x, gamma, mean, inv)


def layer_norm(x: Any, gamma: Any, beta: Any, epsilon: float) -> Any:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last axis, as one op."""
    return apply(_layer_norm, x, gamma, beta, epsilon=float(epsilon))[0]
