"""Fused primitives: what the graph optimizer's fusion pass puts in place of op chains.

Each computes exactly its chain (``graph/passes/fuse.py`` lists the chains) in fewer passes
over memory and with fewer fresh arrays:

- ``_FusedConv2D(x, w, b)``: Conv2D -> BiasAdd [-> Relu]; the bias and the ReLU are applied in
  place on the convolution's fresh output.
- ``_FusedBatchNormEx(x, scale, offset)``: FusedBatchNorm -> Relu on y, in the normalize pass;
  a fifth output holds the per-channel [a, b] with y = relu(x*a + b), bit for bit.
- ``_FusedBatchNormGradEx(g, m, x, scale, mean, inv[, addend])``: ReluGrad ->
  FusedBatchNormGrad, the ReLU mask applied while reading g; then optionally -> AddV2 of
  another gradient of x into dx (DenseNet's concatenations sum two paths' gradients). The mask
  comes from `m`: the ReLU's output y (``mask_from="output"``) or, when the forward pass was
  fused too, its [a, b] (``mask_from="coefficients"``: x*a + b > 0 recomputed from the x the
  kernel reads anyway, one activation-sized read fewer in each of its two passes).

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
    specs = normalization_ops._fused_rule(x, scale, offset, epsilon=epsilon)
    return specs + [((2,) + specs[1][0], x[1])]


@op("_FusedBatchNormEx", multi_output=True, same_dtype=True, shape=_fused_bn_rule)
def _fused_batch_norm_ex(x, scale, offset, *, epsilon, activation):
    """FusedBatchNorm's four outputs, y passed through the activation, and [a, b]."""
    relu = _check_activation(activation)
    c = x.shape[-1]
    if scale.shape != (c,) or offset.shape != (c,):
        raise ValueError(f"scale and offset must be vectors of the channel count {c}, got "
                         f"{list(scale.shape)} and {list(offset.shape)}")
    return _bn.forward(x, scale, offset, epsilon, relu=relu, coefficients=True)


@_fused_batch_norm_ex.def_grad
def _(gs, outs, x, scale, offset, *, epsilon, activation):
    gy, *g_stats = gs[:4]  # the coefficients are a by-product for the gradient kernel
    if _check_activation(activation):
        gy = apply(nn_ops._relu_grad, gy, outs[0])
    return normalization_ops._fused_batch_norm.grad_fn((gy, *g_stats), outs[:4], x, scale,
                                                       offset, epsilon=epsilon)


MASK_SOURCES = ("output", "coefficients")


def _fused_bn_grad_rule(g, mask, x, scale, mean, inv, *addend, mask_from="output"):
    return [x, scale, scale]


@op("_FusedBatchNormGradEx", multi_output=True, same_dtype=True, shape=_fused_bn_grad_rule)
def _fused_batch_norm_grad_ex(g, mask, x, scale, mean, inv, *addend, mask_from="output"):
    """FusedBatchNormGrad(ReluGrad(g, y), x, scale, mean, inv), dx plus the addend if given;
    `mask` is y, or the forward's [a, b] with y = relu(x*a + b)."""
    if mask_from not in MASK_SOURCES:
        raise ValueError(f"mask_from must be one of {MASK_SOURCES}, got {mask_from!r}")
    if addend and addend[0].shape != x.shape:
        raise ValueError(f"the addend's shape {list(addend[0].shape)} must be x's "
                         f"{list(x.shape)}")
    expect = x.shape if mask_from == "output" else (2, x.shape[-1])
    if mask.shape != expect:
        raise ValueError(f"mask_from={mask_from!r} needs a mask of shape {list(expect)}, got "
                         f"{list(mask.shape)}")
    relu = {"relu_out" if mask_from == "output" else "relu_coefficients": mask}
    return _bn.backward(g, x, scale, mean, inv, addend=addend[0] if addend else None, **relu)
