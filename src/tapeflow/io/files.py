"""Whole-file reads and writes as tensors (`tf.io.read_file`, `write_file`), and decompression."""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from typing import Any, BinaryIO

import numpy as np

from tapeflow.data import vectorize
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import EagerTensor, Tensor, wrap


def _path(filename: Any) -> str:
    if isinstance(filename, EagerTensor):
        filename = filename.numpy()
    return filename.decode() if isinstance(filename, bytes) else str(filename)


def _string_scalar(data: bytes) -> EagerTensor:
    a = np.empty((), dtype=object)
    a[()] = data
    return wrap(a)


def read_file(filename: Any, name: str | None = None) -> EagerTensor:
    """The bytes of a file as a scalar string tensor; NotFoundError names the path.

    In a map that tf.data runs on whole batches (data/vectorize.py), a vector of names reads
    each file."""
    if isinstance(filename, EagerTensor) and filename.shape.rank == 1 and vectorize.active():
        out = np.empty(filename.shape[0], dtype=object)
        out[:] = [_read(_path(p)) for p in filename.numpy().tolist()]
        return wrap(out)
    if isinstance(filename, Tensor) and not isinstance(filename, EagerTensor):  # traced
        return apply(_read_file, filename)
    return _string_scalar(_read(_path(filename)))


@op("ReadFile", stateful=True, shape=lambda x: ((), _dtypes.string))
def _read_file(filename):
    out = np.empty((), dtype=object)
    out[()] = _read(_path(filename[()]))
    return out


@op("WriteFile", stateful=True, shape=lambda x, data: ((), _dtypes.bool))
def _write_file(filename, data):
    _write(_path(filename[()]), data[()])
    return np.asarray(True)


def _read(path: str) -> bytes:
    """A file's bytes through the OS calls alone (no buffered file object: 8 us instead of 12
    per small file, which image pipelines read by the thousand)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise errors.NotFoundError(f"read_file: {path}: No such file or directory") from None
    try:
        info = os.fstat(fd)
        data = os.read(fd, info.st_size)
        if data and len(data) == info.st_size and stat.S_ISREG(info.st_mode):
            return data
        parts = [data]   # a file that grew, or one whose size stat does not know (/proc, pipes)
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def write_file(filename: Any, contents: Any, name: str | None = None) -> None:
    """Write a scalar string tensor (or bytes) to a file (traced: a stateful op)."""
    if any(isinstance(x, Tensor) and not isinstance(x, EagerTensor)
           for x in (filename, contents)):
        from tapeflow.framework.constant import convert_to_tensor

        apply(_write_file, convert_to_tensor(filename, _dtypes.string),
              convert_to_tensor(contents, _dtypes.string))
        return None
    data = contents.numpy() if isinstance(contents, EagerTensor) else contents
    _write(_path(filename), data)
    return None


def _write(path: str, data: Any) -> None:
    if isinstance(data, str):
        data = data.encode()
    with open(path, "wb") as f:
        f.write(data)


class _ZlibReader:
    """A file-like reader inflating a zlib stream chunk by chunk."""

    def __init__(self, path: str):
        self._f = open(path, "rb")
        self._z = zlib.decompressobj()
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._buf) < n:
            chunk = self._f.read(1 << 16)
            if not chunk:
                self._buf += self._z.flush()
                break
            self._buf += self._z.decompress(chunk)
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def readable(self) -> bool:
        return True

    def __iter__(self):
        return iter(self.read().splitlines(keepends=True))

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> _ZlibReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_compressed(path: str, compression_type: str = "") -> BinaryIO:
    """Open for binary reading, decompressing GZIP or ZLIB streams; NotFoundError if missing."""
    kind = (compression_type or "").upper()
    try:
        if kind == "GZIP":
            return gzip.open(path, "rb")
        if kind == "ZLIB":
            return _ZlibReader(path)
        if kind:
            raise errors.InvalidArgumentError(f"Unknown compression_type {compression_type!r}; "
                                              f"use '', 'GZIP' or 'ZLIB'")
        return open(path, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(f"{path}: No such file or directory") from None
