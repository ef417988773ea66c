"""Windowed ops: 2-D convolution and max/average pooling (NHWC), with gradient primitives.

Every gradient is itself a primitive with its own gradient rule, as in TF, so backward passes
trace into graphs and differentiate again: Conv2D's gradients are Conv2DBackpropInput and
Conv2DBackpropFilter (each bilinear, so their gradients are the other two convolutions);
MaxPool's is MaxPoolGrad (whose gradient is MaxPoolGradGrad, and back); AvgPool's is
AvgPoolGrad (whose gradient is AvgPool). The array code lives in ``tapeflow.kernels``.
"""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, convert_matching, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.kernels import conv as _conv
from tapeflow.kernels import pool as _pool
from tapeflow.kernels.low_precision import widened
from tapeflow.ops.array_ops import transpose

# --- attributes: normalize TF's many spellings into (h, w) pairs and a padding value ---------


def _pair(value: Any, what: str, op_name: str, data_format: str = "NHWC") -> tuple[int, int]:
    """An int, [v], [h, w], or a 4-list in the data format ([1, h, w, 1] for NHWC)."""
    if value is None:
        return (1, 1)
    if hasattr(value, "numpy"):
        value = value.numpy().tolist()
    vals = [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    if len(vals) == 1:
        vals = vals * 2
    elif len(vals) == 4:
        spatial = (1, 2) if data_format == "NHWC" else (2, 3)
        others = [vals[i] for i in range(4) if i not in spatial]
        if any(v != 1 for v in others):
            raise errors.InvalidArgumentError(
                f"{op_name}: {what} along the batch and channel dims must be 1 ({data_format}), "
                f"got {vals}\n{errors.user_line()}")
        vals = [vals[i] for i in spatial]
    if len(vals) != 2 or min(vals) < 1:
        raise errors.InvalidArgumentError(
            f"{op_name}: {what} must be a positive int or a list of 1, 2 or 4 positive ints, "
            f"got {value!r}\n{errors.user_line()}")
    return vals[0], vals[1]


def _padding(padding: Any, op_name: str, data_format: str = "NHWC"):
    """'SAME' | 'VALID' | ((top, bottom), (left, right)) from TF's forms."""
    if isinstance(padding, str):
        p = padding.upper()
        if p in ("SAME", "VALID"):
            return p
    elif isinstance(padding, (list, tuple)) and len(padding) == 4:
        pairs = [tuple(int(v) for v in pr) for pr in padding]
        spatial = (1, 2) if data_format == "NHWC" else (2, 3)
        if all(len(pr) == 2 for pr in pairs) and min(min(pr) for pr in pairs) >= 0 and all(
                pairs[i] == (0, 0) for i in range(4) if i not in spatial):
            return tuple(pairs[i] for i in spatial)
    raise errors.InvalidArgumentError(
        f"{op_name}: padding must be 'SAME', 'VALID' or explicit [[0, 0], [top, bottom], "
        f"[left, right], [0, 0]] (non-negative, NHWC), got {padding!r}\n{errors.user_line()}")


def _out_len(size: int | None, k: int | None, s: int, d: int, padding, axis: int) -> int | None:
    if size is None or k is None:
        return None
    if padding == "SAME":
        return -(-size // s)
    before, after = (0, 0) if padding == "VALID" else padding[axis]
    return (size + before + after - (k - 1) * d - 1) // s + 1


def _geometry(hw, k, strides, dilations, padding) -> _conv.Geometry:
    return _conv.geometry(tuple(hw), tuple(k), strides, dilations, padding)


def as_tensor(x: Any):
    """Tensors and Variables as they are (a Variable must stay one, so tapes see the read)."""
    return x if isinstance(x, (Tensor, Variable)) else convert_to_tensor(x)


def _as_nhwc(x, data_format: str, op_name: str):
    if data_format == "NHWC":
        return x
    if data_format == "NCHW":
        return transpose(x, [0, 2, 3, 1])
    raise errors.InvalidArgumentError(
        f"{op_name}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}\n"
        f"{errors.user_line()}")


def _from_nhwc(y, data_format: str):
    return y if data_format == "NHWC" else transpose(y, [0, 3, 1, 2])


def _check_float_rank4(x, what: str, op_name: str) -> None:
    if x.shape.rank is not None and x.shape.rank != 4:
        raise errors.InvalidArgumentError(
            f"{op_name}: {what} must be rank 4, got shape {x.shape}\n{errors.user_line()}")
    if not x.dtype.is_floating:
        raise errors.InvalidArgumentError(
            f"{op_name}: {what} must be a float tensor, got {x.dtype.name}\n{errors.user_line()}")


# --- Conv2D and its two gradient primitives ---------------------------------------------------


def _conv_rule(x, w, *, strides, dilations, padding):
    (xs, dtype), ws = x, w[0]
    kh, kw, cin, cout = ws if ws is not None else (None,) * 4
    if xs is None:
        return (None, None, None, cout), dtype
    if cin is not None and xs[3] is not None and cin != xs[3]:
        raise errors.InvalidArgumentError(
            f"Conv2D: input has {xs[3]} channels but the filter expects {cin} "
            f"(input {list(xs)}, filter {list(ws)})\n{errors.user_line()}")
    ho = _out_len(xs[1], kh, strides[0], dilations[0], padding, 0)
    wo = _out_len(xs[2], kw, strides[1], dilations[1], padding, 1)
    return (xs[0], ho, wo, cout), dtype


def _taps_flops(side, w) -> float:
    """2 x the elements of `side` (the output, or the incoming gradient) x the filter's taps x
    input channels: a convolution's or its input gradient's multiply-adds, doubled."""
    ws, n = w.shape.as_tuple(), side.shape.num_elements()
    if n is None or ws is None or None in ws[:3]:
        return 0.0
    return 2.0 * n * ws[0] * ws[1] * ws[2]


def conv_flops(node) -> float:
    """Cost estimate of a convolution node whose filter is input 1."""
    return _taps_flops(node.outputs[0], node.inputs[1])


def _input_grad_flops(node) -> float:
    return _taps_flops(node.inputs[0], node.inputs[1])


def filter_grad_flops(node) -> float:
    """Cost estimate of a filter gradient (x's channels are the last dim of x and of the
    Winograd tiles alike; the incoming gradient is input 1)."""
    x, g = node.inputs[0].shape.as_tuple(), node.inputs[1].shape.num_elements()
    kh, kw = node.attrs["filter_hw"]
    if g is None or x is None or x[-1] is None:
        return 0.0
    return 2.0 * g * kh * kw * x[-1]


def conv_workspace(node) -> int:
    """The forward convolution kernel's buffers while it runs (``kernels.conv``), for the
    memory plan; 0 while shapes are unknown."""
    x, w = node.inputs[0], node.inputs[1]
    if not (x.shape.is_fully_defined() and w.shape.is_fully_defined()) or x.shape.rank != 4:
        return 0
    xs, ws = x.shape.as_tuple(), w.shape.as_tuple()
    geo = _geometry(xs[1:3], ws[:2], node.attrs["strides"], node.attrs["dilations"],
                    node.attrs["padding"])
    return _conv.conv2d_workspace(xs, ws, geo, x.dtype.as_numpy_dtype)


@op("Conv2D", shape=_conv_rule, same_dtype=True, worker=True, flops=conv_flops,
    workspace=conv_workspace)
@widened
def _conv2d(x, w, *, strides, dilations, padding):
    if x.shape[3] != w.shape[2]:
        raise ValueError(f"input has {x.shape[3]} channels but the filter expects {w.shape[2]}")
    return _conv.conv2d(x, w, _geometry(x.shape[1:3], w.shape[:2], strides, dilations, padding))


def _backprop_input_rule(g, w, *, input_hw, strides, dilations, padding):
    (gs, dtype), ws = g, w[0]
    return ((None if gs is None else gs[0], *input_hw, None if ws is None else ws[2]), dtype)


def _backprop_input_workspace(node) -> int:
    """The input gradient kernel's buffers while it runs, for the memory plan."""
    g, w = node.inputs[0], node.inputs[1]
    if not (g.shape.is_fully_defined() and w.shape.is_fully_defined()) or g.shape.rank != 4:
        return 0
    ws = w.shape.as_tuple()
    geo = _geometry(node.attrs["input_hw"], ws[:2], node.attrs["strides"],
                    node.attrs["dilations"], node.attrs["padding"])
    return _conv.conv2d_backprop_input_workspace(g.shape.as_tuple(), ws, geo,
                                                 g.dtype.as_numpy_dtype)


@op("Conv2DBackpropInput", shape=_backprop_input_rule, same_dtype=True, worker=True,
    flops=_input_grad_flops, workspace=_backprop_input_workspace)
@widened
def _conv2d_backprop_input(g, w, *, input_hw, strides, dilations, padding):
    """Gradient of Conv2D w.r.t. its input, for an input of spatial size `input_hw`."""
    geo = _geometry(input_hw, w.shape[:2], strides, dilations, padding)
    if (geo.ho, geo.wo) != g.shape[1:3]:
        raise ValueError(f"the gradient's spatial size {g.shape[1:3]} does not match the "
                         f"convolution's output size {(geo.ho, geo.wo)}")
    return _conv.conv2d_backprop_input(g, w, geo)


def _backprop_filter_rule(x, g, *, filter_hw, strides, dilations, padding):
    (xs, dtype), gs = x, g[0]
    return ((*filter_hw, None if xs is None else xs[3], None if gs is None else gs[3]), dtype)


def _backprop_filter_workspace(node) -> int:
    """The filter gradient kernel's buffers while it runs, for the memory plan."""
    x, g = node.inputs[0], node.inputs[1]
    if not (x.shape.is_fully_defined() and g.shape.is_fully_defined()) or x.shape.rank != 4:
        return 0
    xs = x.shape.as_tuple()
    geo = _geometry(xs[1:3], node.attrs["filter_hw"], node.attrs["strides"],
                    node.attrs["dilations"], node.attrs["padding"])
    return _conv.conv2d_backprop_filter_workspace(xs, g.shape.as_tuple()[3], geo,
                                                  x.dtype.as_numpy_dtype)


@op("Conv2DBackpropFilter", shape=_backprop_filter_rule, same_dtype=True, worker=True,
    flops=filter_grad_flops, workspace=_backprop_filter_workspace)
@widened
def _conv2d_backprop_filter(x, g, *, filter_hw, strides, dilations, padding):
    """Gradient of Conv2D w.r.t. its filter of spatial size `filter_hw`."""
    geo = _geometry(x.shape[1:3], filter_hw, strides, dilations, padding)
    return _conv.conv2d_backprop_filter(x, g, geo)


def _static_hw(t, what: str, op_name: str, first: int = 1) -> tuple[int, int]:
    """Dims `first` and `first + 1` of `t` (its spatial size), which must be static."""
    dims = t.shape.as_list() if t.shape.rank is not None else [None] * 4
    if dims[first] is None or dims[first + 1] is None:
        raise errors.InvalidArgumentError(
            f"{op_name}: the gradient needs the static spatial size of the {what}, got shape "
            f"{t.shape}; give it a static shape (e.g. in the input_signature)"
            f"\n{errors.user_line()}")
    return dims[first], dims[first + 1]


def _filter_hw(w) -> tuple[int, int]:
    return _static_hw(w, "filter", "Conv2D", first=0)


@_conv2d.def_grad
def _(g, out, x, w, *, strides, dilations, padding):
    conv = dict(strides=strides, dilations=dilations, padding=padding)
    dx = apply(_conv2d_backprop_input, g, w, input_hw=_static_hw(x, "input", "Conv2D"), **conv)
    dw = apply(_conv2d_backprop_filter, x, g, filter_hw=_filter_hw(w), **conv)
    return dx, dw


@_conv2d_backprop_input.def_grad
def _(gg, out, g, w, *, input_hw, strides, dilations, padding):
    conv = dict(strides=strides, dilations=dilations, padding=padding)
    return (apply(_conv2d, gg, w, **conv),
            apply(_conv2d_backprop_filter, gg, g, filter_hw=_filter_hw(w),
                  **conv))


@_conv2d_backprop_filter.def_grad
def _(gw, out, x, g, *, filter_hw, strides, dilations, padding):
    conv = dict(strides=strides, dilations=dilations, padding=padding)
    return (apply(_conv2d_backprop_input, g, gw, input_hw=_static_hw(x, "input", "Conv2D"),
                  **conv),
            apply(_conv2d, x, gw, **conv))


@export("nn.conv2d")
def conv2d(input: Any, filters: Any, strides: Any, padding: Any,  # noqa: A002
           data_format: str = "NHWC", dilations: Any = None, name: str | None = None):
    """2-D cross-correlation of `input` [N, H, W, Cin] with `filters` [kh, kw, Cin, Cout]."""
    x, w = convert_matching(input, filters, op_name="Conv2D")
    _check_float_rank4(x, "input", "Conv2D")
    _check_float_rank4(w, "filters", "Conv2D")
    attrs = dict(strides=_pair(strides, "strides", "Conv2D", data_format),
                 dilations=_pair(dilations, "dilations", "Conv2D", data_format),
                 padding=_padding(padding, "Conv2D", data_format))
    if max(attrs["strides"]) > 1 and max(attrs["dilations"]) > 1:
        raise errors.InvalidArgumentError(
            f"Conv2D: strides > 1 together with dilations > 1 is not supported (TF neither), "
            f"got strides {attrs['strides']} and dilations {attrs['dilations']}\n"
            f"{errors.user_line()}")
    y = apply(_conv2d, _as_nhwc(x, data_format, "Conv2D"), w, **attrs)
    return _from_nhwc(y, data_format)


@export("nn.conv1d")
def conv1d(input: Any, filters: Any, stride: Any, padding: Any,  # noqa: A002
           data_format: str = "NWC", dilations: Any = None, name: str | None = None):
    """1-D cross-correlation of `input` [N, W, Cin] with `filters` [k, Cin, Cout].

    A composition, as in TF: a 1 x k ``conv2d`` on [N, 1, W, Cin], so it shares Conv2D's
    kernels and gradients.
    """
    from tapeflow.ops.array_ops import expand_dims, squeeze

    x, w = as_tensor(input), as_tensor(filters)
    if data_format != "NWC":
        raise errors.InvalidArgumentError(
            f"Conv1D: data_format must be 'NWC', got {data_format!r}\n{errors.user_line()}")
    for t, what in ((x, "input"), (w, "filters")):
        if t.shape.rank is not None and t.shape.rank != 3:
            raise errors.InvalidArgumentError(
                f"Conv1D: {what} must be rank 3, got shape {t.shape}\n{errors.user_line()}")
    s = _width(stride, "stride", "Conv1D")
    d = 1 if dilations is None else _width(dilations, "dilations", "Conv1D")
    if isinstance(padding, (list, tuple)):  # explicit [[0, 0], [left, right], [0, 0]]
        padding = [[0, 0], [0, 0], list(padding[1]), [0, 0]]
    y = conv2d(expand_dims(x, 1), expand_dims(w, 0), strides=[1, s], padding=padding,
               dilations=[1, d])
    return squeeze(y, [1])


@export("nn.conv2d_transpose")
def conv2d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: Any = "SAME", data_format: str = "NHWC", dilations: Any = None,
                     name: str | None = None):
    """The adjoint of ``conv2d`` (a "deconvolution"); `filters` is [kh, kw, Cout, Cin]."""
    x, w = as_tensor(input), as_tensor(filters)
    _check_float_rank4(x, "input", "Conv2DBackpropInput")
    shape = output_shape.numpy().tolist() if hasattr(output_shape, "numpy") else output_shape
    hw = (shape[1], shape[2]) if data_format == "NHWC" else (shape[2], shape[3])
    y = apply(_conv2d_backprop_input, _as_nhwc(x, data_format, "conv2d_transpose"), w,
              input_hw=(int(hw[0]), int(hw[1])),
              strides=_pair(strides, "strides", "conv2d_transpose", data_format),
              dilations=_pair(dilations, "dilations", "conv2d_transpose", data_format),
              padding=_padding(padding, "conv2d_transpose", data_format))
    return _from_nhwc(y, data_format)


# --- pooling ---------------------------------------------------------------------------------


def _pool_rule(x, *, ksize, strides, padding):
    xs, dtype = x
    if xs is None:
        return None, dtype
    return (xs[0], _out_len(xs[1], ksize[0], strides[0], 1, padding, 0),
            _out_len(xs[2], ksize[1], strides[1], 1, padding, 1), xs[3]), dtype


def _pool_geometry(hw, ksize, strides, padding) -> _conv.Geometry:
    return _geometry(hw, ksize, strides, (1, 1), padding)


@op("MaxPool", shape=_pool_rule, worker=True)
@widened
def _max_pool(x, *, ksize, strides, padding):
    return _pool.max_pool(x, _pool_geometry(x.shape[1:3], ksize, strides, padding))


@op("MaxPoolGrad", shape=lambda x, out, g, **attrs: x, worker=True)
@widened
def _max_pool_grad(x, out, g, *, ksize, strides, padding):
    """Gradient of MaxPool: each window's gradient goes to its first maximum."""
    return _pool.max_pool_grad(x, out, g, _pool_geometry(x.shape[1:3], ksize, strides, padding))


@op("MaxPoolGradGrad", shape=lambda x, out, gx, **attrs: out)
@widened
def _max_pool_grad_grad(x, out, gx, *, ksize, strides, padding):
    """Gradient of MaxPoolGrad w.r.t. its incoming gradient: `gx` read at each window's max."""
    geo = _pool_geometry(x.shape[1:3], ksize, strides, padding)
    return _pool.max_pool_grad_grad(x, out, gx, geo)


@_max_pool.def_grad
def _(g, out, x, **attrs):
    return apply(_max_pool_grad, x, out, g, **attrs)


@_max_pool_grad.def_grad
def _(gg, dx, x, out, g, **attrs):
    return None, None, apply(_max_pool_grad_grad, x, out, gg, **attrs)


@_max_pool_grad_grad.def_grad
def _(gg, res, x, out, gx, **attrs):
    return None, None, apply(_max_pool_grad, x, out, gg, **attrs)


@op("AvgPool", shape=_pool_rule, worker=True)
@widened
def _avg_pool(x, *, ksize, strides, padding):
    return _pool.avg_pool(x, _pool_geometry(x.shape[1:3], ksize, strides, padding))


def _avg_grad_rule(g, *, input_hw, ksize, strides, padding):
    gs, dtype = g
    return (None if gs is None else (gs[0], *input_hw, gs[3])), dtype


@op("AvgPoolGrad", shape=_avg_grad_rule, worker=True)
@widened
def _avg_pool_grad(g, *, input_hw, ksize, strides, padding):
    """Gradient of AvgPool: each window's gradient shared evenly by its valid entries."""
    return _pool.avg_pool_grad(g, _pool_geometry(input_hw, ksize, strides, padding))


@_avg_pool.def_grad
def _(g, out, x, **attrs):
    return apply(_avg_pool_grad, g, input_hw=_static_hw(x, "input", "AvgPool"), **attrs)


@_avg_pool_grad.def_grad
def _(gg, out, g, *, input_hw, **attrs):
    return apply(_avg_pool, gg, **attrs)


def _pooling(kernel_op, name: str, input: Any, ksize: Any, strides: Any,  # noqa: A002
          padding: Any, data_format: str | None):
    x = as_tensor(input)
    data_format = data_format or ("NWC" if x.shape.rank == 3 else "NHWC")
    if x.shape.rank == 3 and data_format == "NWC":  # 1-D pooling as a 1 x k window
        from tapeflow.ops.array_ops import expand_dims, squeeze

        k, s = (_width(v, what, name) for v, what in ((ksize, "ksize"), (strides, "strides")))
        return squeeze(_pooling(kernel_op, name, expand_dims(x, 1), [1, k], [1, s], padding,
                             "NHWC"), [1])
    _check_float_rank4(x, "input", name)
    attrs = dict(ksize=_pair(ksize, "ksize", name, data_format),
                 strides=_pair(strides, "strides", name, data_format),
                 padding=_padding(padding, name, data_format))
    y = apply(kernel_op, _as_nhwc(x, data_format, name), **attrs)
    return _from_nhwc(y, data_format)


def _width(value: Any, what: str, op_name: str) -> int:
    """The window size or stride of 1-D pooling: k, [k] or [1, k, 1] (NWC)."""
    vals = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(vals) == 3 and vals[0] == vals[2] == 1:
        vals = vals[1:2]
    if len(vals) != 1 or int(vals[0]) < 1:
        raise errors.InvalidArgumentError(
            f"{op_name}: {what} of 1-D pooling must be k, [k] or [1, k, 1], got {value!r}\n"
            f"{errors.user_line()}")
    return int(vals[0])


@export("nn.max_pool2d")
def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None):
    """Maximum over each ksize window (padding never wins)."""
    return _pooling(_max_pool, "MaxPool", input, ksize, strides, padding, data_format)


@export("nn.avg_pool2d")
def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None):
    """Mean over each ksize window; with SAME padding, over its valid entries only (as TF)."""
    return _pooling(_avg_pool, "AvgPool", input, ksize, strides, padding, data_format)


@export("nn.max_pool1d")
def max_pool1d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NWC", name: str | None = None):
    """Maximum over each window of [N, W, C] input (a 1 x k ``max_pool2d``)."""
    return _pooling(_max_pool, "MaxPool", input, ksize, strides, padding, data_format)


@export("nn.avg_pool1d")
def avg_pool1d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NWC", name: str | None = None):
    """Mean over each window of [N, W, C] input (a 1 x k ``avg_pool2d``)."""
    return _pooling(_avg_pool, "AvgPool", input, ksize, strides, padding, data_format)


@export("nn.max_pool")
def max_pool(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
             data_format: str | None = None, name: str | None = None):
    """``max_pool2d`` for rank-4 input, 1-D pooling for rank-3 (NWC) input."""
    return _pooling(_max_pool, "MaxPool", input, ksize, strides, padding, data_format)


@export("nn.avg_pool")
def avg_pool(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
             data_format: str | None = None, name: str | None = None):
    """``avg_pool2d`` for rank-4 input, 1-D pooling for rank-3 (NWC) input."""
    return _pooling(_avg_pool, "AvgPool", input, ksize, strides, padding, data_format)
