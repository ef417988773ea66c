"""3-D convolution and pooling (NDHWC) written as 2-D ones over the depth taps.

No new primitive: a 3-D window is a sum (max, mean) over its depth taps of 2-D windows, so
``conv3d`` takes, for each depth tap, the strided depth slice of the input, folds depth into
the batch, runs ``conv2d`` with that tap's [kh, kw, Cin, Cout] filter and sums the taps. Pooling
and ``conv3d_transpose`` do the same with ``max_pool2d``/``avg_pool2d``/``conv2d_transpose``.
Gradients come from those ops; the cost is kd 2-D passes, fine for the small depth kernels
3-D models use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.ops import array_ops, conv_ops, math_ops
from tapeflow.ops.conv_ops import as_tensor


def _triple(value: Any, what: str, op_name: str) -> tuple[int, int, int]:
    """An int, [v], [d, h, w] or [1, d, h, w, 1]."""
    if value is None:
        return (1, 1, 1)
    if hasattr(value, "numpy"):
        value = value.numpy().tolist()
    vals = [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    if len(vals) == 1:
        vals = vals * 3
    elif len(vals) == 5:
        if vals[0] != 1 or vals[4] != 1:
            raise errors.InvalidArgumentError(
                None, op_name, f"{op_name}: `{what}` in the batch and channel dimensions must "
                f"be 1, got {vals}\n{errors.user_line()}")
        vals = vals[1:4]
    if len(vals) != 3 or min(vals) < 1:
        raise errors.InvalidArgumentError(
            None, op_name, f"{op_name}: `{what}` must be 1, 3 or 5 positive ints, got {value}"
                           f"\n{errors.user_line()}")
    return tuple(vals)  # type: ignore[return-value]


def _padding(padding: Any, op_name: str) -> str:
    p = padding.upper() if isinstance(padding, str) else padding
    if p not in ("SAME", "VALID"):
        raise errors.InvalidArgumentError(
            None, op_name, f"{op_name}: padding must be 'SAME' or 'VALID', got {padding!r}"
                           f"\n{errors.user_line()}")
    return p


def _check_5d(x: Any, op_name: str, data_format: str) -> list:
    if data_format != "NDHWC":
        raise errors.InvalidArgumentError(
            None, op_name, f"{op_name}: only data_format='NDHWC' is supported, got "
                           f"{data_format!r}\n{errors.user_line()}")
    shape = x.shape.as_list() if x.shape.rank is not None else None
    if shape is None or len(shape) != 5 or any(d is None for d in shape[1:]):
        raise errors.InvalidArgumentError(
            None, op_name, f"{op_name}: input must be [batch, depth, height, width, channels] "
                           f"with known depth, height, width and channels, got "
                           f"{x.shape}\n{errors.user_line()}")
    return shape


def _depth_padding(depth: int, window: int, stride: int, dilation: int,
                   padding: str) -> tuple[int, int, int]:
    """(pad before, pad after, output depth) along the depth axis, TF's SAME/VALID rule."""
    span = (window - 1) * dilation + 1
    if padding == "VALID":
        return 0, 0, max(0, (depth - span) // stride + 1)
    out = -(-depth // stride)
    total = max((out - 1) * stride + span - depth, 0)
    return total // 2, total - total // 2, out


def _taps(x: Any, window: int, stride: int, dilation: int, out: int) -> list:
    """For each depth tap, the [B * out, H, W, C] slice it reads (depth folded into batch)."""
    _, _, h, w, c = x.shape.as_list()
    taps = []
    for k in range(window):
        start = k * dilation
        part = x[:, start:start + (out - 1) * stride + 1:stride]
        taps.append(array_ops.reshape(part, [-1, h, w, c]))
    return taps


def _unfold(y: Any, depth: int) -> Any:
    _, h, w, c = y.shape.as_list()
    return array_ops.reshape(y, [-1, depth, h, w, c])


@export("nn.conv3d")
def conv3d(input: Any, filters: Any, strides: Any, padding: Any,  # noqa: A002
           data_format: str = "NDHWC", dilations: Any = None, name: str | None = None):
    """3-D cross-correlation of `input` [N, D, H, W, Cin] with `filters` [kd, kh, kw, Cin,
    Cout]."""
    x, w = as_tensor(input), as_tensor(filters)
    _check_5d(x, "Conv3D", data_format)
    if w.shape.rank != 5:
        raise errors.InvalidArgumentError(
            None, "Conv3D", f"Conv3D: filters must be [kd, kh, kw, in, out], got {w.shape}"
                            f"\n{errors.user_line()}")
    if int(w.shape[3]) != int(x.shape[4]):
        raise errors.InvalidArgumentError(
            None, "Conv3D", f"Conv3D: input has {x.shape[4]} channels but filters expect "
                            f"{w.shape[3]}\n{errors.user_line()}")
    (sd, sh, sw), (dd, dh, dw) = (_triple(strides, "strides", "Conv3D"),
                                  _triple(dilations, "dilations", "Conv3D"))
    pad = _padding(padding, "Conv3D")
    kd = int(w.shape[0])
    before, after, out = _depth_padding(int(x.shape[1]), kd, sd, dd, pad)
    if before or after:
        x = array_ops.pad(x, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]])
    ys = [conv_ops.conv2d(t, w[k], strides=[sh, sw], padding=pad, dilations=[dh, dw])
          for k, t in enumerate(_taps(x, kd, sd, dd, out))]
    return _unfold(math_ops.add_n(ys) if len(ys) > 1 else ys[0], out)


@export("nn.max_pool3d")
def max_pool3d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NDHWC", name: str | None = None):
    """Maximum over each [kd, kh, kw] window (padding never wins)."""
    x = as_tensor(input)
    _check_5d(x, "MaxPool3D", data_format)
    (kd, kh, kw), (sd, sh, sw) = (_triple(ksize, "ksize", "MaxPool3D"),
                                  _triple(strides, "strides", "MaxPool3D"))
    pad = _padding(padding, "MaxPool3D")
    before, after, out = _depth_padding(int(x.shape[1]), kd, sd, 1, pad)
    if before or after:  # the lowest finite value: never the maximum of a real window
        x = array_ops.pad(x, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]],
                          constant_values=float(np.finfo(x.dtype.as_numpy_dtype).min))
    y = None
    for t in _taps(x, kd, sd, 1, out):
        p = conv_ops.max_pool2d(t, [kh, kw], [sh, sw], pad)
        y = p if y is None else math_ops.maximum(y, p)
    return _unfold(y, out)


@export("nn.avg_pool3d")
def avg_pool3d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NDHWC", name: str | None = None):
    """Mean over each [kd, kh, kw] window; with SAME padding over its valid entries only."""
    x = as_tensor(input)
    _check_5d(x, "AvgPool3D", data_format)
    (kd, kh, kw), (sd, sh, sw) = (_triple(ksize, "ksize", "AvgPool3D"),
                                  _triple(strides, "strides", "AvgPool3D"))
    pad = _padding(padding, "AvgPool3D")
    depth = int(x.shape[1])
    before, after, out = _depth_padding(depth, kd, sd, 1, pad)
    if before or after:
        x = array_ops.pad(x, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]])
    ys = [conv_ops.avg_pool2d(t, [kh, kw], [sh, sw], pad) for t in _taps(x, kd, sd, 1, out)]
    total = _unfold(math_ops.add_n(ys) if len(ys) > 1 else ys[0], out)
    starts = np.arange(out) * sd - before  # how many depth taps of each window are real
    count = np.minimum(starts + kd, depth) - np.maximum(starts, 0)
    scale = (1.0 / count).astype(x.dtype.as_numpy_dtype).reshape(1, out, 1, 1, 1)
    return total * convert_to_tensor(scale)


@export("nn.conv3d_transpose")
def conv3d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: Any = "SAME", data_format: str = "NDHWC", dilations: Any = None,
                     name: str | None = None):
    """The adjoint of ``conv3d``; `filters` is [kd, kh, kw, Cout, Cin]."""
    x, w = as_tensor(input), as_tensor(filters)
    _, depth, h, wd, _ = _check_5d(x, "Conv3DBackpropInputV2", data_format)
    shape = output_shape.numpy().tolist() if hasattr(output_shape, "numpy") else output_shape
    out_d, out_h, out_w, out_c = (int(v) for v in shape[1:])
    (sd, sh, sw), (dd, dh, dw) = (_triple(strides, "strides", "Conv3DBackpropInputV2"),
                                  _triple(dilations, "dilations", "Conv3DBackpropInputV2"))
    pad = _padding(padding, "Conv3DBackpropInputV2")
    kd = int(w.shape[0])
    flat = array_ops.reshape(x, [-1, h, wd, int(x.shape[4])])
    full = (depth - 1) * sd + (kd - 1) * dd + 1
    total = None
    for k in range(kd):
        y = _unfold(conv_ops.conv2d_transpose(flat, w[k], [1, out_h, out_w, out_c],
                                              strides=[sh, sw], padding=pad,
                                              dilations=[dh, dw]), depth)
        if sd > 1:  # input step i lands at depth i * sd: interleave sd - 1 zero planes
            y = array_ops.pad(array_ops.expand_dims(y, 2),
                              [[0, 0], [0, 0], [0, sd - 1], [0, 0], [0, 0], [0, 0]])
            y = array_ops.reshape(y, [-1, depth * sd, out_h, out_w, out_c])
            y = y[:, :(depth - 1) * sd + 1]
        y = array_ops.pad(y, [[0, 0], [k * dd, (kd - 1 - k) * dd], [0, 0], [0, 0], [0, 0]])
        total = y if total is None else total + y
    # the forward conv of an out_d-deep output pads `before` planes: crop them off
    before = 0
    if pad == "SAME":
        before = max((-(-out_d // sd) - 1) * sd + (kd - 1) * dd + 1 - out_d, 0) // 2
    end = before + out_d
    if end > full:
        total = array_ops.pad(total, [[0, 0], [0, end - full], [0, 0], [0, 0], [0, 0]])
    return total[:, before:end]
