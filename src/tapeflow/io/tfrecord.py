"""TFRecord files: length-prefixed records, each length and payload guarded by a masked CRC-32C.

Layout of one record: uint64 length, uint32 masked_crc(length), payload, uint32 masked_crc(payload),
little-endian. A mismatch raises DataLossError naming the file and byte offset of the record.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.tensor import EagerTensor
from tapeflow.io import tfrecord_scan
from tapeflow.io.crc32c import masked_crc32c
from tapeflow.io.files import _path, open_compressed


class TFRecordOptions:
    """`tf.io.TFRecordOptions`: compression of a TFRecord file ('', 'GZIP' or 'ZLIB')."""

    def __init__(self, compression_type: str | None = None, compression_level: int | None = None,
                 **_: Any):
        self.compression_type = (compression_type or "").upper()
        self.compression_level = compression_level


class TFRecordWriter:
    """`tf.io.TFRecordWriter`: append records to a TFRecord file; use as a context manager."""

    def __init__(self, path: Any, options: TFRecordOptions | str | None = None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(options)
        self._path = _path(path)
        level = options.compression_level
        raw = open(self._path, "wb")
        if options.compression_type == "GZIP":
            self._f = gzip.GzipFile(fileobj=raw, mode="wb",
                                    compresslevel=9 if level is None else level)
            self._raw = raw
        elif options.compression_type == "ZLIB":
            self._f, self._raw = raw, None
            self._z = zlib.compressobj(-1 if level is None else level)
        elif options.compression_type == "":
            self._f, self._raw = raw, None
        else:
            raw.close()
            raise errors.InvalidArgumentError(
                f"TFRecordWriter: unknown compression_type {options.compression_type!r}")
        self._zlib = options.compression_type == "ZLIB"

    def write(self, record: Any) -> None:
        """Append one record (bytes, str or a scalar string tensor)."""
        if isinstance(record, EagerTensor):
            record = record.numpy()
        if isinstance(record, str):
            record = record.encode()
        record = bytes(record)
        header = struct.pack("<Q", len(record))
        data = (header + struct.pack("<I", masked_crc32c(header)) + record
                + struct.pack("<I", masked_crc32c(record)))
        self._f.write(self._z.compress(data) if self._zlib else data)

    def flush(self) -> None:
        if self._zlib:
            self._f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._f.flush()

    def close(self) -> None:
        if self._f.closed:
            return
        if self._zlib:
            self._f.write(self._z.flush())
        self._f.close()
        if self._raw is not None:
            self._raw.close()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_CHUNK = 1 << 20


def tf_record_iterator(path: Any, compression_type: str = "") -> Iterator[bytes]:
    """The payloads of a TFRecord file, checking both CRCs of every record."""
    path = _path(path)
    if tfrecord_scan.AVAILABLE:
        return _framed(path, compression_type)
    return _record_by_record(path, compression_type)


def _framed(path: str, compression_type: str) -> Iterator[bytes]:
    """Records found a chunk at a time by the compiled framer."""
    for block in record_blocks(path, compression_type):
        yield from block


def record_blocks(path: Any, compression_type: str = "") -> Iterator[list[bytes]]:
    """The payloads of a TFRecord file in lists of up to 4096 consecutive records (one call of
    the compiled framer each), CRC-checked: what `batch` cuts batches from without a Python
    step per record. Without numba, lists of one record."""
    path = _path(path)
    if not tfrecord_scan.AVAILABLE:
        yield from ([r] for r in _record_by_record(path, compression_type))
        return
    table = tfrecord_scan.table()
    starts = np.empty(4096, dtype=np.int64)
    ends = np.empty(4096, dtype=np.int64)
    with open_compressed(path, compression_type) as f:
        data, base = f.read(_CHUNK), 0
        while True:
            n, used, status, bad = tfrecord_scan.frame(np.frombuffer(data, np.uint8), table,
                                                       starts, ends)
            yield [data[s:e] for s, e in zip(starts[:n].tolist(), ends[:n].tolist())]
            if status != tfrecord_scan.OK:
                what = "length" if status == tfrecord_scan.BAD_LENGTH_CRC else "data"
                raise errors.DataLossError(
                    f"{path}: corrupted record at offset {base + bad}: {what} CRC mismatch")
            data, base = data[used:], base + used
            if n == len(starts):
                continue
            more = f.read(max(_CHUNK, len(data)))
            if not more:
                if data:
                    _truncated(path, base, data)
                return
            data += more


def _truncated(path: str, offset: int, tail: bytes) -> None:
    if len(tail) < 12:
        raise errors.DataLossError(
            f"{path}: truncated record header at offset {offset} ({len(tail)} of 12 bytes)")
    length = struct.unpack("<Q", tail[:8])[0]
    raise errors.DataLossError(
        f"{path}: truncated record at offset {offset}: expected {length} bytes")


def _record_by_record(path: str, compression_type: str) -> Iterator[bytes]:
    with open_compressed(path, compression_type) as f:
        offset = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise errors.DataLossError(
                    f"{path}: truncated record header at offset {offset} "
                    f"({len(header)} of 12 bytes)")
            length, length_crc = struct.unpack("<QI", header)
            if masked_crc32c(header[:8]) != length_crc:
                raise errors.DataLossError(
                    f"{path}: corrupted record at offset {offset}: length CRC mismatch")
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise errors.DataLossError(
                    f"{path}: truncated record at offset {offset}: expected {length} bytes")
            data, (data_crc,) = body[:length], struct.unpack("<I", body[length:])
            if masked_crc32c(data) != data_crc:
                raise errors.DataLossError(
                    f"{path}: corrupted record at offset {offset}: data CRC mismatch")
            yield data
            offset += 12 + length + 4
