"""More of ``tf.nn``: weighted_moments, local response normalization, max_pool_with_argmax,
collapse_repeated (TensorFlow's semantics; the differentiable ones are compositions of existing
ops). The ones returning or taking SparseTensors live in sparse/nn.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, conv_ops, math_ops, reduce_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.linalg_ops import matmul


@export("nn.weighted_moments")
def weighted_moments(x: Any, axes: Any, frequency_weights: Any, keepdims: bool = False,
                     name: str | None = None) -> tuple:
    """(weighted mean, weighted variance) over `axes`."""
    t = _tensor(x)
    w = math_ops.cast(_tensor(frequency_weights), t.dtype)
    axes = list(axes) if isinstance(axes, (list, tuple)) else [axes]
    total = reduce_ops.reduce_sum(w * array_ops.ones_like(t), axis=axes, keepdims=True)
    mean = reduce_ops.reduce_sum(w * t, axis=axes, keepdims=True) / total
    var = reduce_ops.reduce_sum(w * math_ops.square(t - mean), axis=axes, keepdims=True) / total
    if not keepdims:
        mean = array_ops.squeeze(mean, axes)
        var = array_ops.squeeze(var, axes)
    return mean, var


@export("nn.local_response_normalization", "nn.lrn")
def local_response_normalization(input: Any, depth_radius: int = 5, bias: float = 1.0,  # noqa: A002
                                 alpha: float = 1.0, beta: float = 0.5,
                                 name: str | None = None) -> Any:
    """x / (bias + alpha * sum of squares over the 2r+1 nearest channels) ** beta (NHWC)."""
    x = _tensor(input)
    channels = x.shape[-1]
    r = int(depth_radius)
    band = np.abs(np.arange(channels)[:, None] - np.arange(channels)[None, :]) <= r
    flat = array_ops.reshape(math_ops.square(x), [-1, channels])
    sqr_sum = array_ops.reshape(matmul(flat, convert_to_tensor(band.astype(x.dtype._np))),
                                array_ops.shape(x))
    return x / math_ops.pow(bias + alpha * sqr_sum, beta)


@op("MaxPoolArgmax", shape=lambda x, *, ksize, strides, padding, include_batch, dtype: (
    None, dtype))
def _pool_argmax(x, *, ksize, strides, padding, include_batch, dtype):
    b, h, w, c = x.shape
    flat_index = np.arange(x.size, dtype=np.int64).reshape(x.shape)
    if not include_batch:
        flat_index = flat_index - (np.arange(b) * h * w * c)[:, None, None, None]
    out_h = (h - ksize[0]) // strides[0] + 1 if padding == "VALID" else -(-h // strides[0])
    out_w = (w - ksize[1]) // strides[1] + 1 if padding == "VALID" else -(-w // strides[1])
    pad_h = max((out_h - 1) * strides[0] + ksize[0] - h, 0) // 2 if padding == "SAME" else 0
    pad_w = max((out_w - 1) * strides[1] + ksize[1] - w, 0) // 2 if padding == "SAME" else 0
    out = np.zeros((b, out_h, out_w, c), np.int64)
    for i in range(out_h):
        for j in range(out_w):
            y0, x0 = i * strides[0] - pad_h, j * strides[1] - pad_w
            ys = slice(max(y0, 0), min(y0 + ksize[0], h))
            xs = slice(max(x0, 0), min(x0 + ksize[1], w))
            window = x[:, ys, xs, :].reshape(b, -1, c)
            pick = np.argmax(window, axis=1)
            idx = flat_index[:, ys, xs, :].reshape(b, -1, c)
            out[:, i, j, :] = np.take_along_axis(idx, pick[:, None, :], axis=1)[:, 0, :]
    return out.astype(dtype._np)


def _pair(v: Any, what: str) -> tuple:
    v = [int(d) for d in np.asarray(v).reshape(-1)]
    if len(v) == 1:
        return v[0], v[0]
    return (v[1], v[2]) if len(v) == 4 else (v[0], v[1])


@export("nn.max_pool_with_argmax")
def max_pool_with_argmax(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
                         data_format: str = "NHWC", output_dtype: Any = _dtypes.int64,
                         include_batch_in_index: bool = False, name: str | None = None) -> tuple:
    """(max pool, flattened index of each maximum: ((b * H + y) * W + x) * C + c, batch
    included only when asked)."""
    x = _tensor(input)
    k, s = _pair(ksize, "ksize"), _pair(strides, "strides")
    pooled = conv_ops.max_pool2d(x, list(k), list(s), padding)
    argmax = apply(_pool_argmax, x, ksize=k, strides=s, padding=padding,
                   include_batch=bool(include_batch_in_index),
                   dtype=_dtypes.as_dtype(output_dtype))
    return pooled, argmax


@op("CollapseRepeated", multi_output=True, shape=lambda labels, lengths: [
    (labels[0], labels[1]), (lengths[0], lengths[1])])
def _collapse(labels, lengths):
    out = np.zeros_like(labels)
    new_lengths = np.zeros_like(lengths)
    width = 0
    for b in range(labels.shape[0]):
        row = labels[b, :int(lengths[b])].tolist()
        kept = [v for i, v in enumerate(row) if i == 0 or v != row[i - 1]]
        out[b, :len(kept)] = kept
        new_lengths[b] = len(kept)
        width = max(width, len(kept))
    return out[:, :width], new_lengths


@export("nn.collapse_repeated")
def collapse_repeated(labels: Any, seq_length: Any, name: str | None = None) -> tuple:
    """Merge runs of a repeated label ([batch, time] labels, valid up to seq_length)."""
    return tuple(apply(_collapse, _tensor(labels), _tensor(seq_length)))
