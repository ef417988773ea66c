"""`tf.io.decode_proto` / `encode_proto`: fields of serialized protocol buffers as tensors and
back (TensorFlow's contract: per message, how many values each field holds, and each field's
values padded to the largest count with the field's default). Messages are looked up in the
protobuf descriptor pools this process has ('local://': protobuf's default pool and tapeflow's
own Example / TensorProto pools), in a FileDescriptorSet file, or in 'bytes://' + one."""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op

_FD = descriptor_pb2.FieldDescriptorProto


def _pools(source: str) -> list:
    if source == "local://":
        from tapeflow.io.example_pb import Example
        from tapeflow.io.tensor_proto import TensorProto

        return [descriptor_pool.Default(), Example.DESCRIPTOR.file.pool,
                TensorProto.DESCRIPTOR.file.pool]
    data = source[len("bytes://"):].encode("latin-1") if source.startswith("bytes://") \
        else open(source, "rb").read()
    files = descriptor_pb2.FileDescriptorSet()
    files.ParseFromString(data)
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return [pool]


def _message_class(message_type: str, source: str) -> Any:
    for pool in _pools(source):
        try:
            return message_factory.GetMessageClass(pool.FindMessageTypeByName(message_type))
        except KeyError:
            continue
    raise errors.InvalidArgumentError(
        f"decode_proto/encode_proto: no descriptor found for message type {message_type!r} in "
        f"{source!r}")


def _wire_values(msg: Any, field: Any) -> list:
    if field.is_repeated:
        values = list(getattr(msg, field.name))
    elif field.type == _FD.TYPE_MESSAGE:
        values = [getattr(msg, field.name)] if msg.HasField(field.name) else []
    else:
        present = {f.name for f, _ in msg.ListFields()}
        values = [getattr(msg, field.name)] if field.name in present else []
    if field.type == _FD.TYPE_MESSAGE:
        return [v.SerializeToString() for v in values]
    if field.type == _FD.TYPE_STRING:
        return [v.encode() for v in values]
    return values


def _decode_rule(data, *, message_type, fields, dtypes, source):
    batch = data[0]
    sizes = (None if batch is None else tuple(batch) + (len(fields),), _dtypes.int32)
    return [sizes] + [(None if batch is None else tuple(batch) + (None,), d) for d in dtypes]


@op("DecodeProtoV2", multi_output=True, shape=_decode_rule)
def _decode(data, *, message_type, fields, dtypes, source):
    cls = _message_class(message_type, source)
    descs = []
    for name in fields:
        field = cls.DESCRIPTOR.fields_by_name.get(name)
        if field is None:
            raise errors.InvalidArgumentError(
                f"decode_proto: {message_type} has no field {name!r}")
        descs.append(field)
    parsed = []
    for raw in data.reshape(-1).tolist():
        msg = cls()
        try:
            msg.ParseFromString(raw)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
            raise errors.DataLossError(f"decode_proto: unable to parse a {message_type}: "
                                       f"{e}") from None
        parsed.append([_wire_values(msg, f) for f in descs])
    sizes = np.array([[len(v) for v in row] for row in parsed], np.int32).reshape(
        data.shape + (len(fields),))
    outs = [sizes]
    for j, dtype in enumerate(dtypes):
        width = max(int(sizes[..., j].max()) if sizes.size else 0, 1)  # TF: at least 1
        if dtype is _dtypes.string:
            block = np.full((len(parsed), width), b"", dtype=object)
        else:
            block = np.zeros((len(parsed), width), dtype._np)
        for i, row in enumerate(parsed):
            block[i, :len(row[j])] = row[j]
        outs.append(block.reshape(data.shape + (width,)))
    return tuple(outs)


@export("io.decode_proto")
def decode_proto(bytes: Any, message_type: str, field_names: list, output_types: list,  # noqa: A002
                 descriptor_source: str = "local://", message_format: str = "binary",
                 sanitize: bool = False, name: str | None = None) -> tuple:
    """(sizes [..., fields], [values [..., max count] per field]) of serialized messages."""
    if message_format != "binary":
        raise ValueError("decode_proto: only message_format='binary' is supported")
    if len(field_names) != len(output_types):
        raise ValueError("decode_proto: field_names and output_types must have the same length")
    outs = apply(_decode, convert_to_tensor(bytes, _dtypes.string), message_type=message_type,
                 fields=tuple(field_names),
                 dtypes=tuple(_dtypes.as_dtype(t) for t in output_types),
                 source=descriptor_source)
    return outs[0], list(outs[1:])


@op("EncodeProto", shape=lambda sizes, *values, fields, message_type, source: (
    None if sizes[0] is None else tuple(sizes[0][:-1]), _dtypes.string))
def _encode(sizes, *values, fields, message_type, source):
    cls = _message_class(message_type, source)
    batch = sizes.shape[:-1]
    out = np.empty(batch, dtype=object)
    for index in np.ndindex(*batch):
        msg = cls()
        for j, name in enumerate(fields):
            field = cls.DESCRIPTOR.fields_by_name[name]
            count = int(sizes[index + (j,)])
            items = values[j][index][:count].tolist()
            if field.type == _FD.TYPE_STRING:
                items = [v.decode() if isinstance(v, bytes) else v for v in items]
            if field.type == _FD.TYPE_MESSAGE:
                parsed = []
                for raw in items:
                    sub = getattr(msg, name).__class__() if not field.is_repeated \
                        else getattr(msg, name).add()
                    sub.ParseFromString(raw)
                    parsed.append(sub)
                if not field.is_repeated and parsed:
                    getattr(msg, name).CopyFrom(parsed[-1])
            elif field.is_repeated:
                getattr(msg, name).extend(items)
            elif items:
                setattr(msg, name, items[-1])
        out[index] = msg.SerializeToString()
    return out


@export("io.encode_proto")
def encode_proto(sizes: Any, values: list, field_names: list, message_type: str,
                 descriptor_source: str = "local://", name: str | None = None) -> Any:
    """Serialized messages whose field j holds the first sizes[..., j] of values[j][...]."""
    return apply(_encode, convert_to_tensor(sizes, _dtypes.int32),
                 *[convert_to_tensor(v) for v in values], fields=tuple(field_names),
                 message_type=message_type, source=descriptor_source)
