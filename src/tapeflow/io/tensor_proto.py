"""`tf.io.serialize_tensor` / `parse_tensor`: a tensor as TensorFlow's `TensorProto` bytes.

The schema (TensorFlow's public tensor.proto / tensor_shape.proto, the fields used here) is
declared with `descriptor_pb2` in a private pool. Numbers travel as little-endian
`tensor_content`, strings as `string_val`, as TensorFlow writes them, so the bytes equal
TensorFlow's; parsing also reads the typed `*_val` lists other writers use.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor

_F = descriptor_pb2.FieldDescriptorProto

# TensorFlow's DataType enum values (types.proto)
_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
         "string": 7, "complex64": 8, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17,
         "complex128": 18, "float16": 19, "uint32": 22, "uint64": 23}
_NAME = {v: k for k, v in _ENUM.items()}
# the typed list a writer may use instead of tensor_content, per dtype
_VALUES = {"float32": "float_val", "float64": "double_val", "int32": "int_val",
           "uint8": "int_val", "int16": "int_val", "int8": "int_val", "string": "string_val",
           "complex64": "scomplex_val", "int64": "int64_val", "bool": "bool_val",
           "bfloat16": "half_val", "uint16": "int_val", "complex128": "dcomplex_val",
           "float16": "half_val", "uint32": "uint32_val", "uint64": "uint64_val"}


def _build() -> Any:
    fd = descriptor_pb2.FileDescriptorProto(name="tapeflow/tensor.proto", package="tensorflow",
                                            syntax="proto3")
    shape = fd.message_type.add(name="TensorShapeProto")
    dim = shape.nested_type.add(name="Dim")
    dim.field.add(name="size", number=1, type=_F.TYPE_INT64)
    dim.field.add(name="name", number=2, type=_F.TYPE_STRING)
    shape.field.add(name="dim", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                    type_name=".tensorflow.TensorShapeProto.Dim")
    shape.field.add(name="unknown_rank", number=3, type=_F.TYPE_BOOL)
    t = fd.message_type.add(name="TensorProto")
    t.field.add(name="dtype", number=1, type=_F.TYPE_INT32)
    t.field.add(name="tensor_shape", number=2, type=_F.TYPE_MESSAGE,
                type_name=".tensorflow.TensorShapeProto")
    t.field.add(name="version_number", number=3, type=_F.TYPE_INT32)
    t.field.add(name="tensor_content", number=4, type=_F.TYPE_BYTES)
    for name, number, ftype in (("float_val", 5, _F.TYPE_FLOAT), ("double_val", 6, _F.TYPE_DOUBLE),
                                ("int_val", 7, _F.TYPE_INT32), ("string_val", 8, _F.TYPE_BYTES),
                                ("scomplex_val", 9, _F.TYPE_FLOAT),
                                ("int64_val", 10, _F.TYPE_INT64), ("bool_val", 11, _F.TYPE_BOOL),
                                ("dcomplex_val", 12, _F.TYPE_DOUBLE),
                                ("half_val", 13, _F.TYPE_INT32),
                                ("uint32_val", 16, _F.TYPE_UINT32),
                                ("uint64_val", 17, _F.TYPE_UINT64)):
        t.field.add(name=name, number=number, type=ftype, label=_F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.TensorProto"))


TensorProto = _build()


def to_proto(arr: np.ndarray) -> Any:
    """A NumPy array (object arrays hold bytes) as a TensorProto."""
    name = "string" if arr.dtype == object else _dtypes.as_dtype(arr.dtype).name
    proto = TensorProto(dtype=_ENUM[name])
    proto.tensor_shape.SetInParent()
    for d in arr.shape:
        proto.tensor_shape.dim.add(size=d)
    if name == "string":
        proto.string_val.extend(arr.ravel().tolist())
    else:
        proto.tensor_content = np.ascontiguousarray(arr).astype(
            arr.dtype.newbyteorder("<")).tobytes()
    return proto


def from_proto(proto: Any) -> np.ndarray:
    """The array a TensorProto holds (tensor_content, or a typed list; the last value repeats
    to fill the shape, as TensorFlow reads short lists)."""
    name = _NAME.get(proto.dtype)
    if name is None:
        raise errors.InvalidArgumentError(f"parse_tensor: unsupported DataType {proto.dtype}")
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    n = int(np.prod(shape, dtype=np.int64))
    if name == "string":
        values = list(proto.string_val)
        out = np.empty(n, dtype=object)
        out[:] = (values + values[-1:] * (n - len(values)))[:n] if values else [b""] * n
        return out.reshape(shape)
    np_dtype = _dtypes.as_dtype(name)._np
    if proto.tensor_content:
        flat = np.frombuffer(proto.tensor_content, dtype=np.dtype(np_dtype).newbyteorder("<"))
        return flat.astype(np_dtype).reshape(shape)
    values = np.asarray(getattr(proto, _VALUES[name]))
    if name in ("float16", "bfloat16"):
        values = values.astype(np.uint16).view(np_dtype)
    elif name.startswith("complex"):
        values = values.reshape(-1, 2) @ np.asarray([1, 1j])
    values = values.astype(np_dtype)
    if len(values) < n:
        fill = values[-1] if len(values) else np.zeros((), np_dtype)
        values = np.concatenate([values, np.full(n - len(values), fill, np_dtype)])
    return values[:n].reshape(shape)


@op("SerializeTensor", shape=lambda x: ((), _dtypes.string))
def _serialize_tensor(x):
    out = np.empty((), dtype=object)
    out[()] = to_proto(x).SerializeToString()
    return out


@op("ParseTensor", shape=lambda x, *, out_type: (None, out_type))
def _parse_tensor(data, *, out_type):
    if data.ndim != 0:
        raise errors.InvalidArgumentError(
            f"parse_tensor: serialized must be a scalar string, got shape {list(data.shape)}")
    try:
        proto = TensorProto.FromString(data[()])
    except Exception:  # noqa: BLE001 - protobuf's DecodeError
        raise errors.InvalidArgumentError(
            f"parse_tensor: could not parse serialized as a TensorProto "
            f"({len(data[()])} bytes)") from None
    arr = from_proto(proto)
    found = _NAME[proto.dtype]
    if found != out_type.name:
        raise errors.InvalidArgumentError(
            f"parse_tensor: type mismatch between parsed tensor ({found}) and dtype "
            f"({out_type.name})")
    return arr


def serialize_tensor(tensor: Any, name: str | None = None) -> Tensor:
    """A scalar string: the tensor as TensorFlow's TensorProto bytes."""
    return apply(_serialize_tensor, convert_to_tensor(tensor))


def parse_tensor(serialized: Any, out_type: Any, name: str | None = None) -> Tensor:
    """The tensor `serialize_tensor` wrote (its dtype must be `out_type`)."""
    return apply(_parse_tensor, convert_to_tensor(serialized, _dtypes.string),
                 out_type=_dtypes.as_dtype(out_type))


@export("make_tensor_proto")
def make_tensor_proto(values: Any, dtype: Any = None, shape: Any = None,
                      verify_shape: bool = False, allow_broadcast: bool = False) -> Any:
    """A TensorProto as TensorFlow makes one: more than one number as tensor_content, a single
    number (or strings) in the typed list."""
    arr = convert_to_tensor(values, dtype).numpy() if not isinstance(values, np.ndarray) or \
        dtype is not None else values
    arr = np.asarray(arr)
    dims = list(arr.shape) if shape is None else [int(d) for d in shape]
    if arr.size != 1:
        arr = arr.reshape(dims)
    name = "string" if arr.dtype == object else _dtypes.as_dtype(arr.dtype).name
    if name == "string" or arr.size > 1:
        return to_proto(np.ascontiguousarray(np.broadcast_to(arr, dims)))
    proto = TensorProto(dtype=_ENUM[name])  # one number: the typed list, even for a bigger shape
    proto.tensor_shape.SetInParent()
    for d in dims:
        proto.tensor_shape.dim.add(size=d)
    flat = arr.reshape(-1)
    if name in ("float16", "bfloat16"):
        values_list = flat.view(np.uint16).astype(np.int64).tolist()
    elif name.startswith("complex"):
        values_list = [v for z in flat for v in (float(z.real), float(z.imag))]
    else:
        values_list = flat.tolist()
    getattr(proto, _VALUES[name]).extend(values_list)
    return proto


@export("make_ndarray")
def make_ndarray(tensor: Any) -> np.ndarray:
    """The NumPy array a TensorProto holds."""
    return from_proto(tensor)
