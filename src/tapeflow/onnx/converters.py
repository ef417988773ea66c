"""ONNX forms of tapeflow's ops: one converter per op name, each emitting ONNX nodes.

A converter gets the export context and the tapeflow node and returns the ONNX names of the
node's outputs. Layouts follow ONNX: NHWC convolutions and pools are wrapped in transposes to
NCHW (onnxruntime folds them), TF's ``SAME`` padding is ``auto_pad=SAME_UPPER`` (the extra
padding at the end, as TensorFlow puts it), and average pooling leaves padding out of the
count, as TensorFlow does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

CONVERTERS: dict[str, Callable[[Any, Any], list[str]]] = {}
_NHWC_TO_NCHW, _NCHW_TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def converter(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for name in names:
            CONVERTERS[name] = fn
        return fn
    return register


def _simple(onnx_op: str) -> Callable:
    def convert(ctx: Any, node: Any) -> list[str]:
        return [ctx.add(onnx_op, ctx.inputs(node), node)]
    return convert


for _tf, _onnx in {"AddV2": "Add", "Add": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div",
                   "Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Neg": "Neg",
                   "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Abs": "Abs",
                   "Maximum": "Max", "Minimum": "Min", "Pow": "Pow", "Identity": "Identity",
                   "Floor": "Floor", "Ceil": "Ceil", "Sign": "Sign", "Erf": "Erf",
                   "Softplus": "Softplus", "Elu": "Elu", "Selu": "Selu",
                   "StopGradient": "Identity", "Reciprocal": "Reciprocal",
                   "Greater": "Greater", "Less": "Less", "Equal": "Equal",
                   "LogicalAnd": "And", "LogicalOr": "Or", "LogicalNot": "Not"}.items():
    CONVERTERS[_tf] = _simple(_onnx)


@converter("Rsqrt")
def _rsqrt(ctx: Any, node: Any) -> list[str]:
    return [ctx.add("Reciprocal", [ctx.add("Sqrt", ctx.inputs(node))], node)]


@converter("Square")
def _square(ctx: Any, node: Any) -> list[str]:
    (x,) = ctx.inputs(node)
    return [ctx.add("Mul", [x, x], node)]


@converter("BiasAdd")
def _bias_add(ctx: Any, node: Any) -> list[str]:
    if node.attrs.get("data_format", "NHWC") != "NHWC":
        raise ctx.unsupported(node, "data_format NCHW")
    return [ctx.add("Add", ctx.inputs(node), node)]


@converter("Softmax", "LogSoftmax")
def _softmax(ctx: Any, node: Any) -> list[str]:
    return [ctx.add(node.op.name, ctx.inputs(node), node, axis=int(node.attrs.get("axis", -1)))]


@converter("LeakyRelu")
def _leaky_relu(ctx: Any, node: Any) -> list[str]:
    return [ctx.add("LeakyRelu", ctx.inputs(node), node, alpha=float(node.attrs["alpha"]))]


@converter("MatMul", "BatchMatMulV2")
def _matmul(ctx: Any, node: Any) -> list[str]:
    a, b = ctx.inputs(node)
    flags = (node.attrs.get("transpose_a", node.attrs.get("adj_x", False)),
             node.attrs.get("transpose_b", node.attrs.get("adj_y", False)))
    operands = []
    for name, tensor, flag in zip((a, b), node.inputs, flags):
        if flag:
            rank = tensor.shape.rank
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            name = ctx.add("Transpose", [name], perm=perm)
        operands.append(name)
    return [ctx.add("MatMul", operands, node)]


def _nchw(ctx: Any, node: Any, onnx_op: str, inputs: list[str], **attrs: Any) -> list[str]:
    x = ctx.add("Transpose", [inputs[0]], perm=_NHWC_TO_NCHW)
    y = ctx.add(onnx_op, [x] + inputs[1:], **attrs)
    return [ctx.add("Transpose", [y], node, perm=_NCHW_TO_NHWC)]


def _padding(ctx: Any, node: Any) -> dict:
    padding = node.attrs.get("padding", "VALID")
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if padding == "VALID":
        return {"auto_pad": "VALID"}
    raise ctx.unsupported(node, f"padding {padding!r}")


@converter("Conv2D")
def _conv2d(ctx: Any, node: Any) -> list[str]:
    if node.attrs.get("data_format", "NHWC") != "NHWC":
        raise ctx.unsupported(node, "data_format NCHW")
    x, w = ctx.inputs(node)
    w = ctx.add("Transpose", [w], perm=[3, 2, 0, 1])  # HWIO -> OIHW
    strides = [int(s) for s in node.attrs.get("strides", (1, 1))][-2:]
    dilations = [int(d) for d in node.attrs.get("dilations", (1, 1))][-2:]
    return _nchw(ctx, node, "Conv", [x, w], strides=strides, dilations=dilations,
                 **_padding(ctx, node))


@converter("DepthwiseConv2dNative")
def _depthwise(ctx: Any, node: Any) -> list[str]:
    x, w = ctx.inputs(node)
    kh, kw, channels, multiplier = node.inputs[1].shape.as_tuple()
    w = ctx.add("Reshape", [w, ctx.constant(np.array([kh, kw, 1, channels * multiplier]))])
    w = ctx.add("Transpose", [w], perm=[3, 2, 0, 1])
    strides = [int(s) for s in node.attrs.get("strides", (1, 1))][-2:]
    return _nchw(ctx, node, "Conv", [x, w], strides=strides, group=int(channels),
                 **_padding(ctx, node))


@converter("MaxPool", "AvgPool")
def _pool(ctx: Any, node: Any) -> list[str]:
    (x,) = ctx.inputs(node)
    kernel = [int(k) for k in node.attrs["ksize"]][-2:]
    strides = [int(s) for s in node.attrs["strides"]][-2:]
    extra = {"count_include_pad": 0} if node.op.name == "AvgPool" else {}
    onnx_op = "MaxPool" if node.op.name == "MaxPool" else "AveragePool"
    return _nchw(ctx, node, onnx_op, [x], kernel_shape=kernel, strides=strides,
                 **_padding(ctx, node), **extra)


@converter("Reshape")
def _reshape(ctx: Any, node: Any) -> list[str]:
    inputs = ctx.inputs(node)
    if "shape" in node.attrs:
        shape = [int(d) for d in node.attrs["shape"]]
        if 0 in shape:
            raise ctx.unsupported(node, "a zero-sized target dimension")
        inputs = inputs[:1] + [ctx.constant(np.array(shape, np.int64))]
    else:
        inputs = [inputs[0], ctx.add("Cast", [inputs[1]], to=ctx.INT64)]
    return [ctx.add("Reshape", inputs, node)]


@converter("Transpose")
def _transpose(ctx: Any, node: Any) -> list[str]:
    return [ctx.add("Transpose", ctx.inputs(node)[:1], node,
                    perm=[int(p) for p in node.attrs["perm"]])]


@converter("ConcatV2")
def _concat(ctx: Any, node: Any) -> list[str]:
    rank = node.outputs[0].shape.rank
    axis = int(node.attrs["axis"])
    return [ctx.add("Concat", ctx.inputs(node), node, axis=axis if axis >= 0 else axis + rank)]


def _axes(node: Any) -> list[int] | None:
    axis = node.attrs.get("axis")
    if axis is None:
        return None
    return [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]


@converter("Mean", "Sum", "Max", "Min", "Prod")
def _reduce(ctx: Any, node: Any) -> list[str]:
    onnx_op = {"Mean": "ReduceMean", "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin",
               "Prod": "ReduceProd"}[node.op.name]
    keepdims = int(bool(node.attrs.get("keepdims", False)))
    axes = _axes(node)
    inputs = ctx.inputs(node)[:1]
    if onnx_op == "ReduceSum":  # axes is an input since opset 13
        if axes is not None:
            inputs.append(ctx.constant(np.array(axes, np.int64)))
        return [ctx.add(onnx_op, inputs, node, keepdims=keepdims)]
    extra = {"axes": axes} if axes is not None else {}
    return [ctx.add(onnx_op, inputs, node, keepdims=keepdims, **extra)]


@converter("GatherV2")
def _gather(ctx: Any, node: Any) -> list[str]:
    params, indices = ctx.inputs(node)[:2]
    if node.attrs.get("batch_dims", 0):
        raise ctx.unsupported(node, "batch_dims")
    return [ctx.add("Gather", [params, indices], node, axis=int(node.attrs.get("axis", 0)))]


@converter("StridedSlice")
def _strided_slice(ctx: Any, node: Any) -> list[str]:
    from tapeflow.ops.indexing_ops import _expand_ellipsis

    (x,) = ctx.inputs(node)[:1]
    spec = _expand_ellipsis(node.attrs["spec"], node.inputs[0].shape.rank)
    starts, ends, axes, steps, squeeze, new_axes = [], [], [], [], [], []
    dim = out_dim = 0
    for item in spec:
        kind = item[0]
        if kind == "n":
            new_axes.append(out_dim)
            out_dim += 1
            continue
        if kind == "i":
            index = int(item[1])
            starts.append(index)
            ends.append(index + 1 if index != -1 else np.iinfo(np.int64).max)
            axes.append(dim)
            steps.append(1)
            squeeze.append(dim)
        elif kind == "s":
            _, start, stop, step = item
            step = 1 if step is None else int(step)
            big = np.iinfo(np.int64).max
            starts.append(int(start) if start is not None else (0 if step > 0 else -1))
            ends.append(int(stop) if stop is not None else (big if step > 0 else -big))
            axes.append(dim)
            steps.append(step)
            out_dim += 1
        dim += 1
    y = x
    if axes:
        y = ctx.add("Slice", [x, ctx.constant(np.array(starts, np.int64)),
                              ctx.constant(np.array(ends, np.int64)),
                              ctx.constant(np.array(axes, np.int64)),
                              ctx.constant(np.array(steps, np.int64))])
    if squeeze:
        y = ctx.add("Squeeze", [y, ctx.constant(np.array(squeeze, np.int64))])
    if new_axes:
        y = ctx.add("Unsqueeze", [y, ctx.constant(np.array(new_axes, np.int64))])
    return [ctx.add("Identity", [y], node)]


@converter("ZerosLike", "OnesLike")
def _fill_like(ctx: Any, node: Any) -> list[str]:
    (x,) = ctx.inputs(node)
    value = 0 if node.op.name == "ZerosLike" else 1
    dtype = node.outputs[0].dtype._np
    return [ctx.add("ConstantOfShape", [ctx.add("Shape", [x])], node,
                    value=ctx.tensor(np.array([value], dtype=dtype)))]


@converter("Fill")
def _fill(ctx: Any, node: Any) -> list[str]:
    if node.inputs:
        raise ctx.unsupported(node, "a run-time shape")
    value = np.full(node.attrs["shape"], node.attrs["value"], dtype=node.attrs["dtype"]._np)
    return [ctx.add("Identity", [ctx.constant(value)], node)]


@converter("Unpack")
def _unpack(ctx: Any, node: Any) -> list[str]:
    (x,) = ctx.inputs(node)
    axis = int(node.attrs.get("axis", 0))
    rank = node.inputs[0].shape.rank
    axis = axis if axis >= 0 else axis + rank
    num = len(node.outputs)
    parts = ctx.add_multi("Split", [x, ctx.constant(np.ones(num, np.int64))], num, axis=axis)
    squeeze = ctx.constant(np.array([axis], np.int64))
    return [ctx.add("Squeeze", [p, squeeze], node, output=i) for i, p in enumerate(parts)]


@converter("SplitV", "Split")
def _split(ctx: Any, node: Any) -> list[str]:
    (x,) = ctx.inputs(node)[:1]
    axis = int(node.attrs.get("axis", 0))
    rank = node.inputs[0].shape.rank
    axis = axis if axis >= 0 else axis + rank
    sizes = [t.shape.as_tuple()[axis] for t in node.outputs]
    if any(s is None for s in sizes):
        raise ctx.unsupported(node, "split sizes unknown when exporting")
    parts = ctx.add_multi("Split", [x, ctx.constant(np.array(sizes, np.int64))], len(sizes),
                          axis=axis)
    return [ctx.add("Identity", [p], node, output=i) for i, p in enumerate(parts)]


@converter("Cast")
def _cast(ctx: Any, node: Any) -> list[str]:
    return [ctx.add("Cast", ctx.inputs(node), node, to=ctx.onnx_type(node.outputs[0].dtype))]


@converter("ExpandDims")
def _expand_dims(ctx: Any, node: Any) -> list[str]:
    rank = node.outputs[0].shape.rank
    axis = int(node.attrs["axis"])
    axis = axis if axis >= 0 else axis + rank
    return [ctx.add("Unsqueeze", [ctx.inputs(node)[0], ctx.constant(np.array([axis], np.int64))],
                    node)]


@converter("Squeeze")
def _squeeze(ctx: Any, node: Any) -> list[str]:
    axes = _axes(node)
    inputs = ctx.inputs(node)[:1]
    if axes:
        rank = node.inputs[0].shape.rank
        inputs.append(ctx.constant(np.array([a if a >= 0 else a + rank for a in axes],
                                            np.int64)))
    return [ctx.add("Squeeze", inputs, node)]


@converter("Pad")
def _pad(ctx: Any, node: Any) -> list[str]:
    paddings = np.asarray(node.attrs.get("paddings"))
    if paddings is None or paddings.ndim != 2:
        raise ctx.unsupported(node, "run-time paddings")
    pads = np.concatenate([paddings[:, 0], paddings[:, 1]]).astype(np.int64)
    inputs = [ctx.inputs(node)[0], ctx.constant(pads)]
    mode = str(node.attrs.get("mode", "CONSTANT")).lower()
    if mode == "constant":
        value = np.array(node.attrs.get("constant_values", 0), node.outputs[0].dtype._np)
        inputs.append(ctx.constant(value))
    return [ctx.add("Pad", inputs, node, mode=mode)]


@converter("_LSTMSequence")
def _lstm_sequence(ctx: Any, node: Any) -> list[str]:
    """ONNX's LSTM (time-major, as the op) on the projected inputs: W selects them in ONNX's
    gate order (i, o, f, c) from Keras's (i, f, c, o), R is the recurrent kernel transposed and
    the bias gathered the same way (the recurrent half of ONNX's bias is zero). Only hs, h_T and
    c_T exist there; the saved tensors the gradient reads do not (an exported graph has no
    gradient)."""
    p, h0, c0, r, bias = ctx.inputs(node)
    units = node.inputs[3].shape.as_tuple()[0]
    if units is None:
        raise ctx.unsupported(node, "an unknown number of units")
    order = np.concatenate([np.arange(k * units, (k + 1) * units) for k in (0, 3, 1, 2)])
    dtype = node.inputs[0].dtype._np
    w = ctx.constant(np.eye(4 * units, dtype=dtype)[order][None])
    r = ctx.add("Gather", [ctx.add("Transpose", [r], perm=[1, 0]), ctx.constant(order)], axis=0)
    r = ctx.add("Reshape", [r, ctx.constant(np.array([1, 4 * units, units], np.int64))])
    b = ctx.add("Concat", [ctx.add("Gather", [bias, ctx.constant(order)], axis=0),
                           ctx.constant(np.zeros(4 * units, dtype))], axis=0)
    b = ctx.add("Reshape", [b, ctx.constant(np.array([1, 8 * units], np.int64))])
    state = ctx.constant(np.array([1, -1, units], np.int64))
    y, y_h, y_c = ctx.add_multi(
        "LSTM", [p, w, r, b, "", ctx.add("Reshape", [h0, state]),
                 ctx.add("Reshape", [c0, state])], 3, hidden_size=units)
    flat = ctx.constant(np.array([-1, units], np.int64))
    return [ctx.add("Reshape", [y, ctx.constant(np.array([0, -1, units], np.int64))], node,
                    output=0),
            ctx.add("Reshape", [y_h, flat], node, output=1),
            ctx.add("Reshape", [y_c, flat], node, output=2)]
