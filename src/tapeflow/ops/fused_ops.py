"""Fused primitives: what the graph optimizer's fusion pass puts in place of op chains.

Each computes exactly its chain (``graph/passes/fuse.py`` lists the chains) in fewer passes
over memory and with fewer fresh arrays:

- ``_FusedConv2D(x, w, b)``: Conv2D -> BiasAdd [-> Relu]; the bias and the ReLU are applied in
  place on the convolution's fresh output.
- ``_WinogradConv2D(x, w, b)``: ``_FusedConv2D`` that also returns the Winograd tiles of its
  input; ``_WinogradConv2DBackpropFilter(tiles, g)`` is Conv2DBackpropFilter from those tiles
  instead of x (``graph/passes/share_tiles.py`` pairs the two where the tiles take x's place
  or the two run close together).
- ``_FusedBatchNormEx(x, scale, offset)``: FusedBatchNorm -> Relu on y, in the normalize pass;
  a fifth output holds the per-channel [a, b] with y = relu(x*a + b), bit for bit.
- ``_BatchNormStatistics(x, scale, offset)`` and ``_BatchNormReluConv2D(x, w, b, scale, offset,
  *statistics)``: ``_FusedBatchNormEx`` whose y only a convolution on the Winograd path reads
  (``graph/passes/prologue.py``): the statistics pass, then the convolution applies
  relu(x*a + b) as it tiles x, so y is never written (one pass over x and one array fewer).
  With ``moments`` its output's ``_ChannelMoments`` follow, and with ``into_input`` it stores
  its output in the concatenation buffer its input is a prefix of
  (``graph/passes/conv_into_concat.py``).
- ``_FusedBatchNormGradEx(g, m, x, scale, mean, inv[, addend])``: ReluGrad ->
  FusedBatchNormGrad, the ReLU mask applied while reading g; then optionally -> AddV2 of
  another gradient of x into dx (DenseNet's concatenations sum two paths' gradients). The mask
  comes from `m`: the ReLU's output y (``mask_from="output"``) or, when the forward pass was
  fused too, its [a, b] (``mask_from="coefficients"``: x*a + b > 0 recomputed from the x the
  kernel reads anyway, one activation-sized read fewer in each of its two passes). With
  ``dx_sums`` it also returns dx's per-channel sums, summed as dx is written: the bias
  gradients of dx and of its channel slices (``graph/passes/bias_grad_sums.py``). With
  ``pooled`` (kh, kw), g is the input of an AvgPoolGrad (windows = strides, VALID, tiling x)
  whose output it replaces: each entry's share is read from g where it is used.

- ``_ConcatStart(*xs, width)`` and ``_ConcatAppend(prev, *ys)``: a chain of ConcatV2 on the
  last axis, each appending to the previous result, grown in one buffer `width` channels wide
  (``graph/passes/grow_concat.py``): each result is a channel prefix of it, so an append
  copies only its new channels.
- ``_ChannelMoments(x)``: a batch norm's (mean, unbiased variance) of x without the batch
  norm: with those of an earlier batch norm, the statistics of a concatenation
  (``graph/passes/reuse_statistics.py``), which its batch norm then takes as given.

Users never call them (the names start with an underscore, as TF's own fused kernels do). The
forward ones have gradients written with the unfused gradient ops, so an optimized graph is
differentiable like the traced one (a ``tf.function`` called under a tape). Like
FusedBatchNormGrad, ``_FusedBatchNormGradEx`` and ``_WinogradConv2DBackpropFilter`` appear only
in backward graphs and have none.
"""

from __future__ import annotations

from tapeflow.framework.dispatch import apply, op
from tapeflow.kernels import batch_norm as _bn
from tapeflow.kernels import bias as _bias
from tapeflow.kernels import concat as _concat
from tapeflow.kernels import conv as _conv
from tapeflow.kernels import winograd as _winograd
from tapeflow.kernels.low_precision import widened
from tapeflow.ops import array_ops, conv_ops, nn_ops, normalization_ops

ACTIVATIONS = (None, "Relu")


def _check_activation(activation: str | None) -> bool:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation == "Relu"


# --- convolution + bias (+ ReLU) ----------------------------------------------------------------


def _fused_conv_rule(x, w, b, *, strides, dilations, padding, activation):
    return conv_ops._conv_rule(x, w, strides=strides, dilations=dilations, padding=padding)


@op("_FusedConv2D", shape=_fused_conv_rule, same_dtype=True, worker=True,
    flops=conv_ops.conv_flops, workspace=conv_ops.conv_workspace)
@widened
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


# --- convolution that keeps its Winograd input tiles, and the filter gradient from them ----------


def _winograd_geometry(hw, filter_hw, n, cin, cout, dtype, strides, dilations,
                       padding) -> _conv.Geometry:
    geo = conv_ops._geometry(hw, filter_hw, strides, dilations, padding)
    if not _winograd.applies(geo, n, cin, cout, dtype):
        raise ValueError(f"a {filter_hw[0]}x{filter_hw[1]} convolution of {n} {dtype} images "
                         f"{hw[0]}x{hw[1]}x{cin} -> {cout} channels (strides {strides}, "
                         f"dilations {dilations}) does not take the Winograd path")
    return geo


def _winograd_conv_rule(x, w, b, *, strides, dilations, padding, activation):
    y = conv_ops._conv_rule(x, w, strides=strides, dilations=dilations, padding=padding)
    (n, ho, wo, _), dtype = y
    cin, tile = x[0][3] if x[0] is not None else None, _winograd.F4.tile
    tiles = None if None in (n, ho, wo) else n * -(-ho // tile) * -(-wo // tile)
    return [y, ((_winograd.F4.positions, tiles, cin), dtype)]


@op("_WinogradConv2D", multi_output=True, shape=_winograd_conv_rule, same_dtype=True,
    worker=True, flops=conv_ops.conv_flops)
@widened
def _winograd_conv2d(x, w, b, *, strides, dilations, padding, activation):
    """(``_FusedConv2D``'s output, the input's Winograd F(4x4, 3x3) tiles)."""
    relu = _check_activation(activation)
    geo = _winograd_geometry(x.shape[1:3], w.shape[:2], x.shape[0], x.shape[3], w.shape[3],
                             x.dtype, strides, dilations, padding)
    y, tiles = _winograd.conv2d(x, w.astype(x.dtype, copy=False), geo, keep_tiles=True)
    return _bias.add_bias_inplace(y, b, relu), tiles


@_winograd_conv2d.def_grad
def _(gs, outs, x, w, b, *, strides, dilations, padding, activation):
    # the tiles are a by-product for the filter gradient, nothing differentiable reads them
    return _fused_conv2d.grad_fn(gs[0], outs[0], x, w, b, strides=strides, dilations=dilations,
                                 padding=padding, activation=activation)


def _tiles_filter_rule(tiles, g, *, input_hw, filter_hw, strides, dilations, padding):
    (ts, dtype), gs = tiles, g[0]
    return ((*filter_hw, None if ts is None else ts[2], None if gs is None else gs[3]), dtype)


def _tiles_filter_workspace(node) -> int:
    """The kernel's buffers (the gradient's tiler and the sums; the tiles are an input)."""
    tiles, g = node.inputs[0], node.inputs[1]
    if not (tiles.shape.is_fully_defined() and g.shape.is_fully_defined()):
        return 0
    gs = g.shape.as_tuple()
    geo = _winograd_geometry(node.attrs["input_hw"], node.attrs["filter_hw"], gs[0],
                             tiles.shape[2], gs[3], tiles.dtype.as_numpy_dtype,
                             node.attrs["strides"], node.attrs["dilations"],
                             node.attrs["padding"])
    return _winograd.conv2d_backprop_filter_workspace(gs[0], geo, tiles.shape[2], gs[3],
                                                      tiles.dtype.size, from_tiles=True)


@op("_WinogradConv2DBackpropFilter", shape=_tiles_filter_rule, same_dtype=True, worker=True,
    flops=conv_ops.filter_grad_flops, workspace=_tiles_filter_workspace)
@widened
def _winograd_conv2d_backprop_filter(tiles, g, *, input_hw, filter_hw, strides, dilations,
                                     padding):
    """Conv2DBackpropFilter(x, g) from ``_WinogradConv2D``'s tiles of x (`input_hw` its
    spatial size)."""
    geo = _winograd_geometry(input_hw, filter_hw, g.shape[0], tiles.shape[2], g.shape[3],
                             tiles.dtype, strides, dilations, padding)
    return _winograd.conv2d_backprop_filter(None, g, geo, tiles=tiles)


# --- batch norm + ReLU --------------------------------------------------------------------------


def _fused_bn_rule(x, scale, offset, *given, epsilon, activation):
    specs = normalization_ops._fused_rule(x, scale, offset, epsilon=epsilon)
    return specs + [((2,) + specs[1][0], x[1])]


@op("_FusedBatchNormEx", multi_output=True, same_dtype=True, shape=_fused_bn_rule,
    worker=True)
@widened
def _fused_batch_norm_ex(x, scale, offset, *given, epsilon, activation):
    """FusedBatchNorm's four outputs, y passed through the activation, and [a, b]."""
    relu = _check_activation(activation)
    normalization_ops.check_parameters(x, scale, offset, given)
    return _bn.forward(x, scale, offset, epsilon, relu=relu, coefficients=True, given=given)


@_fused_batch_norm_ex.def_grad
def _(gs, outs, x, scale, offset, *given, epsilon, activation):
    gy, *g_stats = gs[:4]  # the coefficients are a by-product for the gradient kernel
    if _check_activation(activation):
        gy = apply(nn_ops._relu_grad, gy, outs[0])
    return normalization_ops._fused_batch_norm.grad_fn((gy, *g_stats), outs[:4], x, scale,
                                                       offset, *given, epsilon=epsilon)


MASK_SOURCES = ("output", "coefficients")


def _fused_bn_grad_rule(g, mask, x, scale, mean, inv, *addend, mask_from="output",
                        dx_sums=False, pooled=None):
    if not dx_sums:
        return [x, scale, scale]
    return [x, scale, scale, ((None if x[0] is None else x[0][-1],), x[1])]


@op("_FusedBatchNormGradEx", multi_output=True, same_dtype=True, shape=_fused_bn_grad_rule,
    worker=True)
@widened
def _fused_batch_norm_grad_ex(g, mask, x, scale, mean, inv, *addend, mask_from="output",
                              dx_sums=False, pooled=None):
    """FusedBatchNormGrad(ReluGrad(g, y), x, scale, mean, inv), dx plus the addend if given;
    `mask` is y, or the forward's [a, b] with y = relu(x*a + b). With `dx_sums` a fourth
    output: dx summed over all axes but the channels, which a BiasAddGrad of dx (or of a
    channel slice of it) takes instead of reading dx again (``graph/passes/bias_grad_sums.py``)."""
    if pooled is not None:  # g: the input of AvgPoolGrad(ksize=strides=pooled, VALID)
        kh, kw = pooled
        n, h, w, c = x.shape
        if g.shape != (n, h // kh, w // kw, c) or h % kh or w % kw:
            raise ValueError(f"a gradient of shape {list(g.shape)} is not that of a {kh}x{kw} "
                             f"average pool of x, shape {list(x.shape)}")
    elif g.shape != x.shape:
        raise ValueError(f"the gradient's shape {list(g.shape)} must be x's {list(x.shape)}")
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
    return _bn.backward(g, x, scale, mean, inv, addend=addend[0] if addend else None,
                        dx_sums=dx_sums, pooled=pooled, **relu)


# --- batch norm + ReLU read by a convolution ------------------------------------------------------


def _bn_statistics_rule(x, scale, offset, *given, epsilon):
    return _fused_bn_rule(x, scale, offset, epsilon=epsilon, activation="Relu")[1:]


@op("_BatchNormStatistics", multi_output=True, same_dtype=True, shape=_bn_statistics_rule)
@widened
def _batch_norm_statistics(x, scale, offset, *given, epsilon):
    """``_FusedBatchNormEx``'s outputs but y: (batch mean, variance, inverse std, [a, b])."""
    normalization_ops.check_parameters(x, scale, offset, given)
    return _bn.statistics(x, scale, offset, epsilon, given)


@_batch_norm_statistics.def_grad
def _(gs, outs, x, scale, offset, *given, epsilon):
    # the statistics' own gradient (moving averages read them); the gradient through the
    # normalized activations is the convolution's (below); inv and [a, b] are by-products
    g_mean, g_var = gs[:2]
    if given:  # passed through from the given ones
        return None, None, None, g_mean, g_var
    return normalization_ops.statistics_gradient(g_mean, g_var, x, outs[0]), None, None


def _bn_relu_conv_rule(x, w, b, scale, offset, mean, var, inv, ab, *, strides, dilations,
                       padding, activation, keep_tiles, epsilon, into_input=False,
                       moments=False):
    if keep_tiles:
        specs = _winograd_conv_rule(x, w, b, strides=strides, dilations=dilations,
                                    padding=padding, activation=activation)
    else:
        specs = [conv_ops._conv_rule(x, w, strides=strides, dilations=dilations,
                                     padding=padding)]
    return specs + (_moments_rule(specs[0]) if moments else [])


@op("_BatchNormReluConv2D", multi_output=True, same_dtype=True, shape=_bn_relu_conv_rule,
    worker=True, flops=conv_ops.conv_flops)
@widened
def _batch_norm_relu_conv2d(x, w, b, scale, offset, mean, var, inv, ab, *, strides, dilations,
                            padding, activation, keep_tiles, epsilon, into_input=False,
                            moments=False):
    """[``_FusedConv2D`` (``_WinogradConv2D`` with `keep_tiles`) of y = max(x*a + b, 0)], y
    the training-mode batch norm + ReLU of x whose ``_BatchNormStatistics`` are the other
    inputs. On the Winograd path y is applied while the tiler reads x and never stored, and
    the bias (+ ReLU) as the output is stored; elsewhere y is materialized. With `moments`,
    the output's ``_ChannelMoments`` follow, summed as it is stored. With `into_input`, where
    x is a channel prefix of a concatenation's buffer with room after it
    (``concat.start``), the output is stored in the channels right after x's and returned
    as that slice, so that the ``_ConcatAppend`` of x and the output copies nothing
    (``graph/passes/conv_into_concat.py``). Its gradient is the convolution's then the batch
    norm's."""
    relu = _check_activation(activation)
    n, c, cout = x.shape[0], x.shape[-1], w.shape[3]
    if ab.shape != (2, c) or c != w.shape[2]:
        raise ValueError(f"input has {c} channels, the coefficients {list(ab.shape)} and the "
                         f"filter {w.shape[2]} input channels")
    w = w.astype(x.dtype, copy=False)
    if keep_tiles:  # raises off the Winograd path
        geo = _winograd_geometry(x.shape[1:3], w.shape[:2], n, c, cout, x.dtype, strides,
                                 dilations, padding)
    else:
        geo = conv_ops._geometry(x.shape[1:3], w.shape[:2], strides, dilations, padding)
    buf = _concat.room(x, cout) if into_input else None
    if buf is not None and buf.shape[1:3] != (geo.ho, geo.wo):
        buf = None
    if keep_tiles or _winograd.applies(geo, n, c, cout, x.dtype):
        return _winograd_outputs(x, w, geo, ab, b, relu, buf, keep_tiles, moments)
    z = _bias.add_bias_inplace(_conv.conv2d(_bn.affine_relu(x, ab), w, geo), b, relu)
    if buf is not None:
        buf[..., c:c + cout] = z
        z = buf[..., c:c + cout]
    return [z, *(_bn.channel_moments(z) if moments else ())]


def _winograd_outputs(x, w, geo, ab, b, relu, buf, keep_tiles, moments) -> list:
    """``_batch_norm_relu_conv2d``'s outputs from the Winograd kernel, epilogue included."""
    out = _winograd.conv2d(x, w, geo, keep_tiles=keep_tiles, prologue=ab, bias=b, relu=relu,
                           into=None if buf is None else (buf, x.shape[-1]), moments=moments)
    return [out] if not (keep_tiles or moments) else list(out)


@_batch_norm_relu_conv2d.def_grad
def _(gs, outs, x, w, b, scale, offset, mean, var, inv, ab, *, strides, dilations, padding,
      activation, keep_tiles, epsilon, into_input=False, moments=False):
    y = apply(nn_ops._relu, x * ab[0] + ab[1])  # the input never stored, for the filter grad
    gz = gs[0]
    if moments:  # the output's statistics (a later batch norm's, given) read it too
        through = normalization_ops.statistics_gradient(gs[-2], gs[-1], outs[0], outs[-2])
        if through is not None:
            gz = gz + through
    dy, dw, db = _fused_conv2d.grad_fn(gz, outs[0], y, w, b, strides=strides,
                                       dilations=dilations, padding=padding,
                                       activation=activation)
    zero = array_ops.zeros_like(mean)  # the statistics' gradient is _BatchNormStatistics'
    dx, dscale, doffset = _fused_batch_norm_ex.grad_fn(
        (dy, zero, zero, zero, array_ops.zeros_like(ab)), (y, mean, var, inv, ab), x, scale,
        offset, epsilon=epsilon, activation="Relu")
    return dx, dw, db, dscale, doffset, None, None, None, None


# --- statistics of a concatenation's parts --------------------------------------------------


def _moments_rule(x):
    shape, dtype = x
    c = (None if shape is None else shape[-1],)
    return [(c, dtype), (c, dtype)]


@op("_ChannelMoments", multi_output=True, same_dtype=True, shape=_moments_rule)
@widened
def _channel_moments(x):
    """(mean, variance with Bessel's correction) over all axes but the last."""
    return _bn.channel_moments(x)


@_channel_moments.def_grad
def _(gs, outs, x):
    return normalization_ops.statistics_gradient(gs[0], gs[1], x, outs[0])


# --- concatenations grown in place -------------------------------------------------------------


def _last_axis_concat_rule(*xs, **_):
    return array_ops._concat_rule(*xs, axis=-1)


def _concat_buffer_bytes(node) -> int:
    """The whole buffer `width` channels wide, of which the output is a prefix."""
    out = node.outputs[0]
    n = out.shape.num_elements()
    return 0 if n is None else n // out.shape[-1] * node.attrs["width"] * out.dtype.size


@op("_ConcatStart", same_dtype=True, shape=_last_axis_concat_rule, worker=True,
    allocates=_concat_buffer_bytes)
def _concat_start(*xs, width):
    """ConcatV2(*xs, axis=-1), the channel prefix of a buffer `width` channels wide."""
    return _concat.start(xs, width)


def _split_last(g, *parts):
    """The gradients of the parts of a last-axis concatenation: g cut into their lengths."""
    return apply(array_ops._split_like, g, *parts, axis=len(parts[0].shape) - 1)


@_concat_start.def_grad
def _(g, out, *xs, width):
    return _split_last(g, *xs)


@op("_ConcatAppend", same_dtype=True, shape=_last_axis_concat_rule, worker=True,
    output="view")
def _concat_append(prev, *ys):
    """ConcatV2(prev, *ys, axis=-1), written into the buffer `prev` is a prefix of."""
    return _concat.append(prev, ys)


@_concat_append.def_grad
def _(g, out, prev, *ys):
    return _split_last(g, prev, *ys)
