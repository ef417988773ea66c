"""Fused primitives: what the graph optimizer's fusion pass puts in place of op chains.

Each computes exactly its chain (``graph/passes/fuse.py`` lists the chains) in fewer passes
over memory and with fewer fresh arrays:

- ``_FusedConv2D(x, w, b)``: Conv2D -> BiasAdd [-> Relu]; the bias and the ReLU are applied in
  place on the convolution's fresh output.
- ``_FusedBatchNormEx(x, scale, offset)``: FusedBatchNorm -> Relu on y, in the normalize pass.
- ``_FusedBatchNormGradEx(g, y, x, scale, mean, inv[, addend])``: ReluGrad ->
  FusedBatchNormGrad, the ReLU mask applied while reading g; then optionally -> AddV2 of
  another gradient of x into dx (DenseNet's concatenations sum two paths' gradients).

Users never call them (the names start with an underscore, as TF's own fused kernels do). The
forward ones have gradients written with the unfused gradient ops, so an optimized graph is
differentiable like the traced one (a ``tf.function`` called under a tape). Like
FusedBatchNormGrad, ``_FusedBatchNormGradEx`` appears only in backward graphs and has none.
"""

from __future__ import annotations

from tapeflow.framework.dispatch import apply, op
from tapeflow.kernels import batch_norm as _bn
from tapeflow.kernels import bias as _bias
from tapeflow.kernels import conv as _conv
from tapeflow.ops import conv_ops, nn_ops, normalization_ops

ACTIVATIONS = (None, "Relu")


def _check_activation(activation: str | None) -> bool:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation == "Relu"


# --- convolution + bias (+ ReLU) ----------------------------------------------------------------


def _fused_conv_rule(x, w, b, *, strides, dilations, padding, activation):
    return conv_ops._conv_rule(x, w, strides=strides, dilations=dilations, padding=padding)


@op("_FusedConv2D", shape=_fused_conv_rule, same_dtype=True)
def _fused_conv2d(x, w, b, *, strides, dilations, padding, activation):
    """activation(Conv2D(x, w) + b), NHWC."""
    relu = _check_activation(activation)
    if x.shape[3] != w.shape[2]:
        raise ValueError(f"input has {x.shape[3]} channels but the filter expects {w.shape[2]}")
    if b.shape != (w.shape[3],):
        raise ValueError(f"bias must be a vector of the {w.shape[3]} output channels, got "
                         f"shape {list(b.shape)}")
    geo = conv_ops._geometry(x.shape[1:3], w.shape[:2], strides, dilations, padding)
    return _bias.add_bias_inplace(_conv.conv2d(x, w, geo), b, relu)


@_fused_conv2d.def_grad
def _(g, out, x, w, b, *, strides, dilations, padding, activation):
    if _check_activation(activation):
        g = apply(nn_ops._relu_grad, g, out)
    dx, dw = conv_ops._conv2d.grad_fn(g, None, x, w, strides=strides, dilations=dilations,
                                      padding=padding)
    return dx, dw, apply(nn_ops._bias_add_grad, g, data_format="NHWC")


# --- batch norm + ReLU --------------------------------------------------------------------------


def _fused_bn_rule(x, scale, offset, *, epsilon, activation):
    return normalization_ops._fused_rule(x, scale, offset, epsilon=epsilon)


@op("_FusedBatchNormEx", multi_output=True, same_dtype=True, shape=_fused_bn_rule)
def _fused_batch_norm_ex(x, scale, offset, *, epsilon, activation):
    """FusedBatchNorm's four outputs, y passed through the activation."""
    relu = _check_activation(activation)
    c = x.shape[-1]
    if scale.shape != (c,) or offset.shape != (c,):
        raise ValueError(f"scale and offset must be vectors of the channel count {c}, got "
                         f"{list(scale.shape)} and {list(offset.shape)}")
    return _bn.forward(x, scale, offset, epsilon, relu=relu)


@_fused_batch_norm_ex.def_grad
def _(gs, outs, x, scale, offset, *, epsilon, activation):
    gy, *g_stats = gs
    if _check_activation(activation):
        gy = apply(nn_ops._relu_grad, gy, outs[0])
    return normalization_ops._fused_batch_norm.grad_fn((gy, *g_stats), outs, x, scale, offset,
                                                       epsilon=epsilon)


def _fused_bn_grad_rule(g, y, x, scale, mean, inv, *addend):
    return [x, scale, scale]


@op("_FusedBatchNormGradEx", multi_output=True, same_dtype=True, shape=_fused_bn_grad_rule)
def _fused_batch_norm_grad_ex(g, y, x, scale, mean, inv, *addend):
    """FusedBatchNormGrad(ReluGrad(g, y), x, scale, mean, inv), dx plus the addend if given."""
    if addend and addend[0].shape != x.shape:
        raise ValueError(f"the addend's shape {list(addend[0].shape)} must be x's "
                         f"{list(x.shape)}")
    return _bn.backward(g, x, scale, mean, inv, relu_out=y, addend=addend[0] if addend else None)
