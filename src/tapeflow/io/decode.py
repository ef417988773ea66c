"""`tf.io.decode_raw`, `decode_base64` / `encode_base64`: bytes of string tensors as numbers."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor


def _raw_shape(x, *, dtype, little_endian, fixed_length):
    shape = x[0]
    size = np.dtype(dtype._np).itemsize
    last = None if fixed_length is None else fixed_length // size
    return (None if shape is None else tuple(shape) + (last,)), dtype


@op("DecodeRaw", shape=_raw_shape)
def _decode_raw(data, *, dtype, little_endian, fixed_length):
    np_dtype = np.dtype(dtype._np).newbyteorder("<" if little_endian else ">")
    items = data.ravel().tolist()
    if fixed_length is not None:
        items = [b[:fixed_length].ljust(fixed_length, b"\0") for b in items]
    lengths = {len(b) for b in items}
    if len(lengths) > 1:
        raise errors.InvalidArgumentError(
            f"decode_raw: input strings must all have the same length, got lengths "
            f"{sorted(lengths)[:4]}")
    if lengths and next(iter(lengths)) % np_dtype.itemsize:
        raise errors.InvalidArgumentError(
            f"decode_raw: input length {next(iter(lengths))} is not a multiple of "
            f"{np_dtype.itemsize}, the size of {dtype.name}")
    flat = np.frombuffer(b"".join(items), dtype=np_dtype).astype(np_dtype.newbyteorder("="))
    return flat.reshape(data.shape + (-1,))


def decode_raw(input_bytes: Any, out_type: Any, little_endian: bool = True,
               fixed_length: int | None = None, name: str | None = None) -> Tensor:
    """Each string becomes a vector of `out_type` values (equal lengths, or `fixed_length`
    bytes: cut or padded with zeros)."""
    return apply(_decode_raw, convert_to_tensor(input_bytes, _dtypes.string),
                 dtype=_dtypes.as_dtype(out_type), little_endian=bool(little_endian),
                 fixed_length=None if fixed_length is None else int(fixed_length))


@op("EncodeBase64", shape=lambda x, *, pad: (x[0], _dtypes.string))
def _encode_base64(data, *, pad):
    out = np.empty(data.shape, dtype=object)
    for i, b in enumerate(data.ravel().tolist()):
        enc = base64.urlsafe_b64encode(b)
        out.reshape(-1)[i] = enc if pad else enc.rstrip(b"=")
    return out


@op("DecodeBase64", shape=lambda x: (x[0], _dtypes.string))
def _decode_base64(data):
    out = np.empty(data.shape, dtype=object)
    for i, b in enumerate(data.ravel().tolist()):
        try:
            out.reshape(-1)[i] = base64.urlsafe_b64decode(b + b"=" * (-len(b) % 4))
        except ValueError as e:
            raise errors.InvalidArgumentError(f"decode_base64: invalid input {b[:20]!r}: {e}") \
                from None
    return out


def encode_base64(input: Any, pad: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """Web-safe base64 (`-` and `_`), without `=` padding unless `pad`."""
    return apply(_encode_base64, convert_to_tensor(input, _dtypes.string), pad=bool(pad))


def decode_base64(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of `encode_base64` (padding optional)."""
    return apply(_decode_base64, convert_to_tensor(input, _dtypes.string))
