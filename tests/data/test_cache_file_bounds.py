"""A hostile or damaged ``Dataset.cache(filename)`` file: every length field is checked against
the bytes left in the file before anything is allocated; each problem is a DataLossError."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors

_MAGIC = 12  # len(b"TFLOWCACHE1\n")


def _cache(tmp_path, values) -> tuple[str, bytes]:
    name = str(tmp_path / "c")
    ds = tf.data.Dataset.from_tensor_slices(values).cache(name)
    list(ds)  # a complete pass writes the file
    path = name + ".tfcache"
    return path, open(path, "rb").read()


def _first_leaf(raw: bytes) -> int:
    (n,) = struct.unpack("<q", raw[_MAGIC:_MAGIC + 8])
    return _MAGIC + 8 + n


def _reread(tmp_path, values, raw: bytes) -> list:
    path = str(tmp_path / "c") + ".tfcache"
    open(path, "wb").write(raw)
    return list(tf.data.Dataset.from_tensor_slices(values).cache(str(tmp_path / "c")))


def _patch(raw: bytes, offset: int, fmt: str, *values) -> bytes:
    packed = struct.pack(fmt, *values)
    return raw[:offset] + packed + raw[offset + len(packed):]


VALUES = np.arange(6, dtype=np.float32).reshape(3, 2)


def test_intact_cache_round_trips(tmp_path):
    _, raw = _cache(tmp_path, VALUES)
    got = _reread(tmp_path, VALUES, raw)
    np.testing.assert_array_equal(np.stack([g.numpy() for g in got]), VALUES)


@pytest.mark.parametrize("field, problem", [
    ("header_length", r"the header at offset 20 claims 1152921504606846976 bytes"),
    ("negative_header_length", r"the header at offset 20 claims -5 bytes"),
    ("dtype_length", r"rank 1 and a dtype name of 4611686018427387904 bytes"),
    ("rank", r"claims rank 1000000"),
    ("shape", r"a <f4\[4294967296, 4294967296\] value at offset \d+ claims "
              r"73786976294838206464 bytes"),
    ("negative_dim", r"negative shape \(-2,\)"),
    ("dtype", r"invalid dtype '\|O8'"),
])
def test_hostile_length_fields_are_refused_before_allocating(tmp_path, field, problem):
    _, raw = _cache(tmp_path, VALUES)
    leaf = _first_leaf(raw)  # <qq n_dtype ndim> b"<f4" <q dim>
    if field == "header_length":
        raw = _patch(raw, _MAGIC, "<q", 2**60)
    elif field == "negative_header_length":
        raw = _patch(raw, _MAGIC, "<q", -5)
    elif field == "dtype_length":
        raw = _patch(raw, leaf, "<q", 2**62)
    elif field == "rank":
        raw = _patch(raw, leaf + 8, "<q", 10**6)
    elif field == "shape":
        raw = raw[:leaf] + struct.pack("<qq", 3, 2) + b"<f4" + struct.pack("<qq", 2**32, 2**32) \
            + raw[leaf + 16 + 3 + 8:]
    elif field == "negative_dim":
        raw = _patch(raw, leaf + 16 + 3, "<q", -2)
    else:
        raw = _patch(raw, leaf + 16, "3s", b"|O8")
    with pytest.raises(errors.DataLossError, match=r"c\.tfcache.*" + problem):
        _reread(tmp_path, VALUES, raw)


def test_hostile_string_lengths_are_refused(tmp_path):
    values = np.array([b"ab", b"cde"], dtype=object)
    _, raw = _cache(tmp_path, values)
    leaf = _first_leaf(raw)  # <qq 6 0> b"string" (rank 0: no dims) <q len> bytes
    lengths_at = leaf + 16 + 6
    with pytest.raises(errors.DataLossError, match=r"string bytes .* claims 1099511627776 bytes"):
        _reread(tmp_path, values, _patch(raw, lengths_at, "<q", 2**40))
    with pytest.raises(errors.DataLossError, match="negative string length"):
        _reread(tmp_path, values, _patch(raw, lengths_at, "<q", -1))


def test_malformed_header_and_truncation(tmp_path):
    _, raw = _cache(tmp_path, VALUES)
    (n,) = struct.unpack("<q", raw[_MAGIC:_MAGIC + 8])
    bad_json = raw[:_MAGIC + 8] + b"[" * n + raw[_MAGIC + 8 + n:]
    with pytest.raises(errors.DataLossError, match="malformed header"):
        _reread(tmp_path, VALUES, bad_json)
    with pytest.raises(errors.DataLossError, match="truncated"):
        _reread(tmp_path, VALUES, raw[:-3])
