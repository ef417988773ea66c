"""More ``tf.nn`` / ``tf.math`` functions that TensorFlow programs call (TF 2.21's semantics):
the convolution backprops as functions (conv2d_backprop_*_v2, depthwise_conv2d_backprop_*),
morphological dilation2d / erosion2d, approx_max_k / approx_min_k (exact on the CPU, as TF's
CPU kernel), isotonic_regression (pool adjacent violators, TF's gradient), generic `pool`, and
batch_norm_with_global_normalization.

The backprops are vector-Jacobian products of the forward convolutions taken with a
GradientTape, so they reuse the Conv2D gradient kernels and are themselves differentiable;
dilation and erosion take the max over gathered windows, so reduce_max gives their gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tape import GradientTape
from tapeflow.ops import (
    array_ops,
    conv_extras,
    conv_ops,
    gather_ops,
    math_ops,
    normalization_ops,
    reduce_ops,
    segment_ops,
)
from tapeflow.ops.array_ops import _tensor


def _sizes(v: Any) -> list:
    return [int(d) for d in np.asarray(v.numpy() if hasattr(v, "numpy") else v).reshape(-1)]


def _vjp(forward: Any, wrt: Any, out_backprop: Any) -> Any:
    """d sum(forward(wrt) * out_backprop) / d wrt."""
    with GradientTape() as tape:
        tape.watch(wrt)
        y = forward(wrt)
    return tape.gradient(y, wrt, output_gradients=out_backprop)


def _conv_args(strides: Any, padding: Any, data_format: str, dilations: Any,
               explicit_paddings: Any = ()) -> dict:
    if padding == "EXPLICIT":
        pads = np.asarray(explicit_paddings).reshape(4, 2).tolist()
        padding = pads
    return dict(strides=strides, padding=padding, data_format=data_format, dilations=dilations)


@export("conv2d_backprop_filter_v2")
def conv2d_backprop_filter_v2(input: Any, filter: Any, out_backprop: Any,  # noqa: A002
                              strides: Any, padding: Any, use_cudnn_on_gpu: bool = True,
                              explicit_paddings: Any = (), data_format: str = "NHWC",
                              dilations: Any = (1, 1, 1, 1), name: str | None = None) -> Any:
    """The gradient of conv2d with respect to its filter (`filter` gives the shape)."""
    x = _tensor(input)
    args = _conv_args(strides, padding, data_format, list(dilations), explicit_paddings)
    w = array_ops.zeros_like(_tensor(filter, x.dtype))
    return _vjp(lambda f: conv_ops.conv2d(x, f, **args), w, _tensor(out_backprop, x.dtype))


@export("conv2d_backprop_input_v2")
def conv2d_backprop_input_v2(input: Any, filter: Any, out_backprop: Any,  # noqa: A002
                             strides: Any, padding: Any, use_cudnn_on_gpu: bool = True,
                             explicit_paddings: Any = (), data_format: str = "NHWC",
                             dilations: Any = (1, 1, 1, 1), name: str | None = None) -> Any:
    """The gradient of conv2d with respect to its input (`input` gives the shape)."""
    w = _tensor(filter)
    args = _conv_args(strides, padding, data_format, list(dilations), explicit_paddings)
    x = array_ops.zeros_like(_tensor(input, w.dtype))
    return _vjp(lambda t: conv_ops.conv2d(t, w, **args), x, _tensor(out_backprop, w.dtype))


def _depthwise_args(strides: Any, padding: Any, data_format: str, dilations: Any) -> dict:
    s = _sizes(strides)
    d = _sizes(dilations)
    hw = (slice(1, 3) if data_format == "NHWC" else slice(2, 4)) if len(s) == 4 else slice(0, 2)
    return dict(strides=[1] + s[hw] + [1], padding=padding, data_format=data_format,
                dilations=d[hw] if len(d) == 4 else d)


@export("nn.depthwise_conv2d_backprop_filter")
def depthwise_conv2d_backprop_filter(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                                     strides: Any, padding: Any, data_format: str = "NHWC",
                                     dilations: Any = (1, 1, 1, 1),
                                     name: str | None = None) -> Any:
    """The gradient of depthwise_conv2d with respect to its [kh, kw, c, multiplier] filter."""
    x = _tensor(input)
    args = _depthwise_args(strides, padding, data_format, dilations)
    w = array_ops.zeros(_sizes(filter_sizes), x.dtype)
    return _vjp(lambda f: conv_extras.depthwise_conv2d(x, f, **args), w,
                _tensor(out_backprop, x.dtype))


@export("nn.depthwise_conv2d_backprop_input")
def depthwise_conv2d_backprop_input(input_sizes: Any, filter: Any, out_backprop: Any,  # noqa: A002
                                    strides: Any, padding: Any, data_format: str = "NHWC",
                                    dilations: Any = (1, 1, 1, 1),
                                    name: str | None = None) -> Any:
    """The gradient of depthwise_conv2d with respect to its input."""
    w = _tensor(filter)
    args = _depthwise_args(strides, padding, data_format, dilations)
    x = array_ops.zeros(_sizes(input_sizes), w.dtype)
    return _vjp(lambda t: conv_extras.depthwise_conv2d(t, w, **args), x,
                _tensor(out_backprop, w.dtype))


# --- morphology ---------------------------------------------------------------------------------


def _window_index(size: int, k: int, stride: int, rate: int, padding: str) -> tuple:
    """Gather positions [out, k] into the padded axis, and the (before, after) padding."""
    span = (k - 1) * rate + 1
    if padding == "VALID":
        out = (size - span) // stride + 1
        before = after = 0
    else:
        out = -(-size // stride)
        total = max((out - 1) * stride + span - size, 0)
        before, after = total // 2, total - total // 2
    index = np.arange(out)[:, None] * stride + np.arange(k)[None, :] * rate
    return index.astype(np.int32), before, after


def _dilation(x: Any, filters: Any, strides: Any, rates: Any, padding: str, fill: float) -> Any:
    """max over each window of x + filter ([N, H, W, C] input, [kh, kw, C] filters)."""
    kh, kw = int(filters.shape[0]), int(filters.shape[1])
    (sh, sw), (rh, rw) = strides, rates
    ih, top, bottom = _window_index(int(x.shape[1]), kh, sh, rh, padding)
    iw, left, right = _window_index(int(x.shape[2]), kw, sw, rw, padding)
    if top or bottom or left or right:
        x = array_ops.pad(x, [[0, 0], [top, bottom], [left, right], [0, 0]],
                          constant_values=fill)
    rows = gather_ops.gather(x, ih, axis=1)            # [N, oh, kh, W, C]
    windows = gather_ops.gather(rows, iw, axis=3)      # [N, oh, kh, ow, kw, C]
    windows = array_ops.transpose(windows, [0, 1, 3, 2, 4, 5])  # [N, oh, ow, kh, kw, C]
    return reduce_ops.reduce_max(windows + filters, axis=[3, 4])


def _morph_args(strides: Any, dilations: Any, data_format: str, what: str) -> tuple:
    if data_format != "NHWC":
        raise ValueError(f"{what}: only data_format='NHWC' is supported (as TF on the CPU)")
    s, d = _sizes(strides), _sizes(dilations)
    return (s[1], s[2]) if len(s) == 4 else tuple(s), (d[1], d[2]) if len(d) == 4 else tuple(d)


@export("nn.dilation2d")
def dilation2d(input: Any, filters: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NHWC", dilations: Any = (1, 1, 1, 1),
               name: str | None = None) -> Any:
    """Grayscale morphological dilation: max over each window of input + filters."""
    x = _tensor(input)
    s, d = _morph_args(strides, dilations, data_format, "dilation2d")
    return _dilation(x, _tensor(filters, x.dtype), s, d, padding, -np.inf)


@export("nn.erosion2d")
def erosion2d(value: Any, filters: Any, strides: Any, padding: str, data_format: str = "NHWC",
              dilations: Any = (1, 1, 1, 1), name: str | None = None) -> Any:
    """Grayscale morphological erosion: min over each window of value - reflected filters."""
    x = _tensor(value)
    s, d = _morph_args(strides, dilations, data_format, "erosion2d")
    flipped = array_ops.reverse(_tensor(filters, x.dtype), [0, 1])
    return -_dilation(-x, flipped, s, d, padding, -np.inf)


# --- approximate top-k (exact here) ---------------------------------------------------------


def _top_k_along(x: Any, k: int, axis: int, largest: bool) -> tuple:
    from tapeflow.ops.array_ops import top_k

    rank = x.shape.rank
    axis %= rank
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = array_ops.transpose(x, perm) if axis != rank - 1 else x
    values, indices = top_k(moved if largest else -moved, int(k))
    if not largest:
        values = -values
    if axis != rank - 1:
        values, indices = array_ops.transpose(values, perm), array_ops.transpose(indices, perm)
    return values, indices


@export("math.approx_max_k", "nn.approx_max_k")
def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
                 name: str | None = None) -> tuple:
    """(values, indices) of the k largest along reduction_dimension: TF's approximation is for
    TPUs; on the CPU it is the exact top-k, sorted, as here."""
    return _top_k_along(_tensor(operand), k, reduction_dimension, True)


@export("math.approx_min_k", "nn.approx_min_k")
def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
                 name: str | None = None) -> tuple:
    """(values, indices) of the k smallest along reduction_dimension (exact on the CPU)."""
    return _top_k_along(_tensor(operand), k, reduction_dimension, False)


@export("approx_top_k")
def approx_top_k(input: Any, k: int, reduction_dimension: int = -1,  # noqa: A002
                 recall_target: float = 0.95, is_max_k: bool = True,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True,
                 name: str | None = None) -> tuple:
    """The raw ApproxTopK op: approx_max_k or approx_min_k by `is_max_k`."""
    return _top_k_along(_tensor(input), k, reduction_dimension, bool(is_max_k))


# --- isotonic regression ------------------------------------------------------------------------


@op("IsotonicRegression", multi_output=True,
    shape=lambda x, *, out_dtype: [(x[0], out_dtype), (x[0], _dtypes.int32)])
def _isotonic(x, *, out_dtype):
    """Per row of [rows, n]: the non-increasing sequence closest in squared error (pool
    adjacent violators) and each element's segment number."""
    rows, n = x.shape
    out = np.empty((rows, n), out_dtype._np)
    seg = np.empty((rows, n), np.int32)
    for r in range(rows):
        means, counts = [], []
        for v in x[r].astype(np.float64):
            means.append(v)
            counts.append(1)
            while len(means) > 1 and means[-2] < means[-1]:  # only strict violations pool
                c = counts[-2] + counts[-1]
                means[-2] = (means[-2] * counts[-2] + means[-1] * counts[-1]) / c
                counts[-2] = c
                means.pop()
                counts.pop()
        out[r] = np.repeat(means, counts)
        seg[r] = np.repeat(np.arange(len(counts)), counts)
    return out, seg


@_isotonic.def_grad
def _(g, out, x, *, out_dtype):
    # each output is the mean of its segment's inputs: the gradient spreads a segment's summed
    # gradient evenly over it (segments numbered per row, made global by row * n)
    from tapeflow.ops.creation_ops import range_

    if not x.dtype.is_floating:
        return None
    grad = g[0]
    shape = array_ops.shape(grad)
    rows, n = shape[0], shape[1]
    ids = array_ops.reshape(out[1] + array_ops.expand_dims(range_(rows) * n, 1), [-1])
    means = segment_ops.unsorted_segment_mean(array_ops.reshape(grad, [-1]), ids, rows * n)
    return math_ops.cast(array_ops.reshape(gather_ops.gather(means, ids), shape), x.dtype)


@export("nn.isotonic_regression")
def isotonic_regression(inputs: Any, decreasing: bool = True, axis: int = -1) -> tuple:
    """(output, segments): along `axis`, the closest non-increasing (or, with
    decreasing=False, non-decreasing) sequence, and the segment each element was pooled into.
    Integer inputs give float64 outputs (float32 for 8/16-bit ones), as TF."""
    x = _tensor(inputs)
    out_dtype = x.dtype if x.dtype.is_floating else (
        _dtypes.float32 if x.dtype.size <= 2 else _dtypes.float64)
    rank = x.shape.rank
    axis %= rank
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = array_ops.transpose(x, perm) if axis != rank - 1 else x
    if not decreasing:
        moved = -moved
    flat = array_ops.reshape(moved, [-1, moved.shape[-1]])
    values, segments = apply(_isotonic, flat, out_dtype=out_dtype)
    values = array_ops.reshape(values, array_ops.shape(moved))
    segments = array_ops.reshape(segments, array_ops.shape(moved))
    if not decreasing:
        values = -values
    if axis != rank - 1:
        values, segments = array_ops.transpose(values, perm), array_ops.transpose(segments, perm)
    return values, segments


# --- pooling and batch norm ---------------------------------------------------------------------


@export("nn.pool")
def pool(input: Any, window_shape: Any, pooling_type: str, strides: Any = None,  # noqa: A002
         padding: str = "VALID", data_format: str | None = None, dilations: Any = None,
         name: str | None = None) -> Any:
    """N-D max or average pooling (1-3 spatial dims) by `pooling_type` ('MAX' or 'AVG')."""
    from tapeflow.ops import conv3d_ops

    x = _tensor(input)
    window = _sizes(window_shape)
    n = len(window)
    strides = [1] * n if strides is None else _sizes(strides)
    kind = pooling_type.upper()
    if kind not in ("MAX", "AVG"):
        raise ValueError(f"pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    fmt = data_format
    rate = [1] * n if dilations is None else _sizes(dilations)
    if any(r != 1 for r in rate):  # TF's recipe: a dense window over the space_to_batch grid
        if any(s != 1 for s in strides):
            raise ValueError(f"tf.nn.pool: strides {strides} > 1 are not supported together "
                             f"with dilations {rate} > 1 (as in TensorFlow)")
        if padding == "SAME":
            raise ValueError(f"tf.nn.pool: 'SAME' padding with dilations {rate} > 1 is not "
                             "implemented (as in TensorFlow); pad the input and use 'VALID'")
        if len(rate) != n:
            raise ValueError(f"tf.nn.pool: dilations {rate} must have one entry per window dim "
                             f"{window}")
        return with_space_to_batch(
            x, rate, padding, lambda converted, _, pad: pool(converted, window, kind, None, pad,
                                                             fmt),
            filter_shape=window, data_format=fmt)
    if n == 1:
        fn = conv_ops.max_pool1d if kind == "MAX" else conv_ops.avg_pool1d
        return fn(x, window, strides, padding, data_format=fmt or "NWC")
    if n == 2:
        fn = conv_ops.max_pool2d if kind == "MAX" else conv_ops.avg_pool2d
        return fn(x, window, strides, padding, data_format=fmt or "NHWC")
    if n == 3:
        fn = conv3d_ops.max_pool3d if kind == "MAX" else conv3d_ops.avg_pool3d
        return fn(x, window, strides, padding, data_format=fmt or "NDHWC")
    raise ValueError(f"tf.nn.pool: 1 to 3 spatial dims, got window_shape {window}")


@export("nn.batch_norm_with_global_normalization")
def batch_norm_with_global_normalization(input: Any, mean: Any, variance: Any, beta: Any,  # noqa: A002
                                         gamma: Any, variance_epsilon: float,
                                         scale_after_normalization: bool,
                                         name: str | None = None) -> Any:
    """Batch normalization with given statistics; gamma scales only when
    scale_after_normalization."""
    return normalization_ops.batch_normalization(
        input, mean, variance, beta, gamma if scale_after_normalization else None,
        variance_epsilon)


@export("nn.with_space_to_batch")
def with_space_to_batch(input: Any, dilation_rate: Any, padding: str, op: Any,  # noqa: A002
                        filter_shape: Any = None, spatial_dims: Any = None,
                        data_format: str | None = None) -> Any:
    """op(converted, num_spatial_dims, padding) on the input rearranged by space_to_batch so
    that a dilated window becomes a dense one (then batch_to_space back): TF's recipe for
    atrous convolution and pooling. With 'SAME', filter_shape gives the padding."""
    from tapeflow.ops import root_extras

    x = _tensor(input)
    rate = _sizes(dilation_rate)
    n = len(rate)
    if spatial_dims is None:
        first = 2 if data_format is not None and data_format.startswith("NC") else 1
        spatial_dims = list(range(first, first + n))
    spatial_dims = [int(d) for d in spatial_dims]
    if spatial_dims != list(range(spatial_dims[0], spatial_dims[0] + n)) or spatial_dims[0] != 1:
        raise NotImplementedError("with_space_to_batch: the spatial dims must be 1..N "
                                  "(channels-last)")
    if all(r == 1 for r in rate):
        return op(x, n, padding)
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("with_space_to_batch: filter_shape must be given for 'SAME'")
        effective = [(int(k) - 1) * r + 1 for k, r in zip(_sizes(filter_shape), rate)]
        extra = [e - 1 for e in effective]
        base = [[e // 2, e - e // 2] for e in extra]
    elif padding == "VALID":
        base = [[0, 0]] * n
    else:
        raise ValueError(f"padding must be 'SAME' or 'VALID', got {padding!r}")
    shape = [int(x.shape[d]) for d in spatial_dims]
    paddings, crops = root_extras.space_to_batch_padding_arrays(shape, rate, base)
    converted = root_extras.space_to_batch_nd(x, rate, paddings)
    return root_extras.batch_to_space(op(converted, n, "VALID"), rate, crops)
