"""TensorFlow's op types and attributes for tapeflow's graph nodes: the one mapping that
GraphDefs (TensorBoard, ``graph.as_graph_def()``), ``Operation.node_def`` / ``get_attr`` and
``ConcreteFunction.function_def`` share.

Most tapeflow ops already carry TensorFlow's name (``MatMul``, ``AddV2``, ``Conv2D``); the
table below renames the others to the type TensorFlow 2.21 gives the same call
(``tf.image.resize`` -> ``ResizeBilinear``, ``tf.pad`` -> ``Pad``). Ops TensorFlow has no
counterpart for keep tapeflow's name. With TensorFlow's op definition (``tf_op_defs.py``,
recorded from TF 2.21) a node gets TensorFlow's attributes: its type attributes (``T``,
``SrcT``/``DstT``, ``Tidx``, ``N`` ...) from its inputs and outputs, ``keepdims`` as
``keep_dims``, NHWC ``strides``/``ksize``/``dilations`` as four values, the op definition's
defaults for the rest (``grad_a``, ``data_format`` ...). tapeflow attributes TensorFlow does not
define (such as ``axis``, which TensorFlow passes as an input) keep their values under a name
starting with ``_``, TensorFlow's mark for attributes outside the op definition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.summary import _tb
from tapeflow.summary.tf_op_defs import OP_DEFS

# tapeflow op -> TensorFlow's type for the same call, where the names differ
_RENAMED = {
    "FusedBatchNorm": "FusedBatchNormV3", "FusedBatchNormGrad": "FusedBatchNormGradV3",
    "BroadcastLike": "BroadcastTo", "BroadcastToDynamic": "BroadcastTo",
    "ReshapeLike": "Reshape", "ReshapeDynamic": "Reshape", "RangeDynamic": "Range",
    "DynamicSlice": "Slice", "SumToShapeOf": "Sum",
    "SplitLike": "SplitV",
    "DenseToDenseSetOperationdifference": "DenseToDenseSetOperation",
    "DenseToDenseSetOperationintersection": "DenseToDenseSetOperation",
    "DenseToDenseSetOperationunion": "DenseToDenseSetOperation",
}
_RESIZE = {"bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor",
           "bicubic": "ResizeBicubic", "area": "ResizeArea", "lanczos3": "ScaleAndTranslate"}
_STATELESS = {"uniform": "StatelessRandomUniformV2", "normal": "StatelessRandomNormalV2",
              "truncated_normal": "StatelessTruncatedNormalV2",
              "int": "StatelessRandomUniformIntV2", "full_int": "StatelessRandomUniformFullIntV2"}
_PADS = ("Pad", "PadV2", "MirrorPad")
# tapeflow attribute -> TensorFlow's name for it (for every op, or for one op type)
_ATTR_NAMES = {"keepdims": "keep_dims", ("Squeeze", "axis"): "squeeze_dims"}
# TensorFlow inputs that tapeflow holds as an attribute of another name
_HELD_AS = {"reduction_indices": "axis", "dim": "axis", "dimension": "axis", "split_dim": "axis"}
# attributes of NHWC ops that TensorFlow spells with the batch and channel entries
_NHWC = frozenset({"strides", "ksize", "dilations"})
_DT = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF",
       "bfloat16": "DT_BFLOAT16", "int32": "DT_INT32", "int64": "DT_INT64", "int16": "DT_INT16",
       "int8": "DT_INT8", "uint8": "DT_UINT8", "uint16": "DT_UINT16", "uint32": "DT_UINT32",
       "uint64": "DT_UINT64", "bool": "DT_BOOL", "string": "DT_STRING",
       "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128", "resource": "DT_RESOURCE",
       "variant": "DT_VARIANT"}
DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def tf_type(node: Any) -> str:
    """TensorFlow's op type for `node` (a graph node; its op's own name when TF has none)."""
    name = node.op.name
    if name == "ResizeImages":
        return _RESIZE.get(node.attrs.get("method"), name)
    if name == "StatelessRandom":
        return _STATELESS.get(node.attrs.get("kind"), name)
    if name == "PadV2":
        if node.attrs.get("mode", "CONSTANT").upper() != "CONSTANT":
            return "MirrorPad"
        return "Pad" if np.all(np.asarray(node.attrs.get("constant_values", 0)) == 0) \
            else "PadV2"
    return _RENAMED.get(name, name)


def shown_types() -> list[str]:
    """Every type `tf_type` can give a registered op (what ``tf_op_defs.py`` records)."""
    from tapeflow.framework.dispatch import REGISTRY

    return sorted(set(REGISTRY) | set(_RENAMED.values()) | set(_RESIZE.values())
                  | set(_STATELESS.values()) | set(_PADS))


def data_type(dtype: Any) -> int:
    types_pb2 = _tb.proto("types_pb2")
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    return types_pb2.DataType.Value(_DT.get(name, "DT_INVALID"))


def from_data_type(enum: int) -> Any:
    """The tapeflow dtype of a ``DataType`` enum (its TensorFlow name for resource/variant)."""
    from tapeflow.framework import dtypes

    name = _tb.proto("types_pb2").DataType.Name(enum)
    for key, value in _DT.items():
        if value == name and key not in ("resource", "variant"):
            return dtypes.as_dtype(key)
    return name[3:].lower()


def shape_proto(dims: Any) -> Any:
    tensor_shape_pb2 = _tb.proto("tensor_shape_pb2")
    if dims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(dim=[
        tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in dims])


def tensor_proto(value: np.ndarray) -> Any:
    tensor_util = _tb.module("util.tensor_util")
    value = np.asarray(value)
    if value.dtype == object:
        value = value.astype(bytes)
    return tensor_util.make_tensor_proto(value)


def attr_value(value: Any, max_tensor: int | None = None) -> Any | None:
    """An AttrValue for one tapeflow attribute value, or None when it has no GraphDef form
    (or is an array of more than `max_tensor` elements)."""
    from tapeflow.framework.dtypes import DType

    A = _tb.proto("attr_value_pb2").AttrValue
    if isinstance(value, bool):
        return A(b=value)
    if isinstance(value, (int, np.integer)):
        return A(i=int(value))
    if isinstance(value, (float, np.floating)):
        return A(f=float(value))
    if isinstance(value, str):
        return A(s=value.encode())
    if isinstance(value, DType):
        return A(type=data_type(value))
    if isinstance(value, np.ndarray) and (max_tensor is None or value.size <= max_tensor):
        return A(tensor=tensor_proto(value))
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            return A(list=A.ListValue(i=[int(v) for v in value]))
        if all(isinstance(v, (int, float, np.number)) for v in value):
            return A(list=A.ListValue(f=[float(v) for v in value]))
        if all(v is None or isinstance(v, int) for v in value):
            return A(shape=shape_proto(value))
        if all(isinstance(v, str) for v in value):
            return A(list=A.ListValue(s=[v.encode() for v in value]))
    return None


def _spread(args: tuple, count: int, held: frozenset = frozenset()) -> list[tuple[tuple, int]]:
    """(argument, how many tensors it takes) for `count` tensors over an op def's arguments:
    none for the ones held as attributes, one each, a list argument the rest."""
    args = [a for a in args if a[0] not in held]
    lists = [a for a in args if a[2] or a[3]]
    rest = max(count - (len(args) - len(lists)), 0)
    return [(a, rest if (a[2] or a[3]) and a is lists[0] else 0 if a[2] or a[3] else 1)
            for a in args]


def _type_attrs(args: tuple, dtypes: list, out: dict, held: frozenset = frozenset()) -> None:
    """Type and count attributes of an op def's arguments from the tensors' dtypes."""
    A = _tb.proto("attr_value_pb2").AttrValue
    i = 0
    for arg, n in _spread(args, len(dtypes), held):
        taken = dtypes[i:i + n]
        i += n
        if arg[2] and arg[2] not in out:
            out[arg[2]] = A(i=len(taken))
        if not taken:
            continue
        if arg[1] and arg[1] not in out and taken[0] is not None:
            out[arg[1]] = A(type=data_type(taken[0]))
        if arg[3] and arg[3] not in out:
            out[arg[3]] = A(list=A.ListValue(type=[data_type(d) for d in taken]))


def _strided_slice_masks(spec: tuple) -> dict[str, int]:
    """TensorFlow's StridedSlice masks for a tapeflow slice spec (ops/indexing_ops.py)."""
    masks = dict.fromkeys(("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                           "shrink_axis_mask"), 0)
    for bit, item in enumerate(spec):
        if item[0] == "s":
            masks["begin_mask"] |= (item[1] is None) << bit
            masks["end_mask"] |= (item[2] is None) << bit
        else:
            key = {"i": "shrink_axis_mask", "n": "new_axis_mask", "e": "ellipsis_mask"}
            masks[key[item[0]]] |= 1 << bit
    return masks


def _fixed_attrs(node: Any, op_type: str) -> dict[str, Any]:
    """Attributes TensorFlow sets for the call tapeflow's op stands for."""
    if "spec" in node.attrs and op_type.startswith(("StridedSlice", "TensorStridedSlice")):
        return _strided_slice_masks(node.attrs["spec"])
    if node.op.name == "ResizeImages" and op_type.startswith("Resize"):  # tf.image.resize
        return {"align_corners": False, "half_pixel_centers": True}
    return {}


def output_arg(op_type: str, index: int, count: int) -> tuple[str, int]:
    """(output argument name, index within it) of output `index` of `count`, as FunctionDefs
    name a node's outputs (``MatMul:product:0``)."""
    op_def = OP_DEFS.get(op_type)
    if op_def is None or not op_def[1]:
        return "output", index
    start = 0
    for arg, n in _spread(op_def[1], count):
        if index < start + n:
            return arg[0], index - start
        start += n
    return op_def[1][-1][0], index - start + 1


def node_attrs(node: Any, op_type: str, max_tensor: int | None = None) -> dict[str, Any]:
    """The node's attributes as TensorFlow writes them for `op_type` (module docstring)."""
    from google.protobuf import text_format

    from tapeflow.framework.variable import Variable
    from tapeflow.graph.ir import Graph

    A = _tb.proto("attr_value_pb2").AttrValue
    op_def = OP_DEFS.get(op_type)
    defined = op_def[2] if op_def is not None else None
    out: dict[str, Any] = {}
    items = list(node.attrs.items())
    if defined is not None:
        items += list(_fixed_attrs(node, op_type).items())
    for key, value in items:
        if key == "name" or isinstance(value, (Variable, Graph)):
            continue
        if key == "shape" and op_type == "Placeholder":
            out[key] = A(shape=shape_proto(value))
            continue
        if defined is not None:
            key = _ATTR_NAMES.get((op_type, key), _ATTR_NAMES.get(key, key))
            if key in _NHWC and key in defined and isinstance(value, (tuple, list)) \
                    and len(value) == 2:
                value = (1, *value, 1)
            if key not in defined:
                key = "_" + key
        attr = attr_value(value, max_tensor)
        if attr is not None:
            out[key] = attr
    if defined is None:
        if node.inputs and "T" not in out:
            out["T"] = A(type=data_type(node.inputs[0].dtype))
        return out
    inputs = [t.dtype for t in node.inputs]
    if isinstance(node.attrs.get("var"), Variable):  # the variable's handle comes first
        inputs.insert(0, None)
    held = frozenset(a[0] for a in op_def[0]
                     if a[0] in node.attrs or _HELD_AS.get(a[0]) in node.attrs)
    _type_attrs(op_def[0], inputs, out, held)
    _type_attrs(op_def[1], [t.dtype for t in node.outputs], out)
    for arg in op_def[0]:  # an input held as an attribute: TF makes a Python int int32
        if arg[1] and arg[1] not in out:
            out[arg[1]] = A(type=data_type("int32"))
    if "output_shapes" in defined and "output_shapes" not in out:  # cond, while_loop
        out["output_shapes"] = A(list=A.ListValue(
            shape=[shape_proto(t.shape.as_tuple()) for t in node.outputs]))
    if "dtype" in defined and "dtype" not in out and node.outputs:
        out["dtype"] = A(type=data_type(node.outputs[0].dtype))
    for key, default in defined.items():
        if key not in out and default is not None:
            out[key] = text_format.Parse(default, A())
    return out
