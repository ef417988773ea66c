"""`cache`: keep the elements of the first complete pass, in memory or in a file.

An incomplete pass (the iterator was dropped early) leaves no cache behind, as in TF: a partial
cache would silently truncate later epochs. The file format is our own, written without pickle:
a header with the element nesting, then per leaf its dtype, shape and raw bytes. It is written
to a temporary name and renamed on completion, so a crash never leaves a half file in place.
"""

from __future__ import annotations

import json
import math
import os
import struct
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from tapeflow.data import structure
from tapeflow.data.dataset import Dataset
from tapeflow.framework import errors

_MAGIC = b"TFLOWCACHE1\n"


class MemoryCacheDataset(Dataset):
    """The cache's bytes count against `options.autotune.ram_budget` with the pipeline's
    buffers (the report shows them on a "Cache" line). A first pass whose elements would pass
    the budget stops keeping them and leaves no cache (later passes recompute them, as after
    an incomplete pass), and says so in the report."""

    def __init__(self, input_dataset: Dataset):
        self._inputs = (input_dataset,)
        self._cache: list | None = None
        self._cache_bytes = 0
        self._lock = threading.Lock()

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        stats = ctx.tuner.stage("Cache")
        try:
            yield from self._cached_or_filled(ctx, stats)
        finally:
            stats.finish()

    def _cached_or_filled(self, ctx: Any, stats: Any) -> Iterator[Any]:
        cached = self._cache
        if cached is not None:
            stats.add_buffered(len(cached), self._cache_bytes)   # held while it is read
            yield from cached
            return
        elements: list | None = []
        held = 0
        source = self._inputs[0]._iterate(ctx)
        try:
            for element in source:
                if elements is not None:
                    size = structure.nbytes(element)
                    if ctx.tuner.admits(size):
                        elements.append(element)
                        held += size
                        stats.add_buffered(1, size)
                    else:
                        stats.add_buffered(-len(elements), -held)
                        stats.notes.append(
                            f"not cached: the elements would pass the RAM budget after "
                            f"{len(elements)} ({held / 2**20:.1f} MiB); later passes recompute "
                            f"them")
                        elements = None
                yield element
        finally:
            source.close()
        if elements is not None:
            with self._lock:
                if self._cache is None:
                    self._cache, self._cache_bytes = elements, held

    def _compute_spec(self) -> Any:
        return self._inputs[0].element_spec

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()


class FileCacheDataset(MemoryCacheDataset):
    def __init__(self, input_dataset: Dataset, filename: str):
        super().__init__(input_dataset)
        self._path = filename + ".tfcache"

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        if os.path.exists(self._path):
            yield from read_cache(self._path)
            return
        tmp = f"{self._path}.tmp-{os.getpid()}-{threading.get_ident()}"
        source = self._inputs[0]._iterate(ctx)
        complete = False
        try:
            with open(tmp, "wb") as f:
                f.write(_MAGIC)
                header_written = False
                for element in source:
                    if not header_written:
                        _write_header(f, element)
                        header_written = True
                    _write_element(f, element)
                    yield element
                if not header_written:
                    _write_header(f, None)
            complete = True
        finally:
            source.close()
            if complete:
                os.replace(tmp, self._path)
            elif os.path.exists(tmp):
                os.remove(tmp)


def _describe(s: Any) -> Any:
    if isinstance(s, dict):
        return {"d": [[k, _describe(v)] for k, v in s.items()]}
    if isinstance(s, tuple):
        return {"t": [_describe(v) for v in s]}
    return None


def _template(d: Any) -> Any:
    if d is None:
        return 0
    if "d" in d:
        return {k: _template(v) for k, v in d["d"]}
    return tuple(_template(v) for v in d["t"])


def _write_header(f: BinaryIO, element: Any) -> None:
    header = json.dumps({"structure": _describe(element), "empty": element is None}).encode()
    f.write(struct.pack("<q", len(header)) + header)


def _write_element(f: BinaryIO, element: Any) -> None:
    for a in structure.flatten(element):
        dtype = b"string" if a.dtype == object else a.dtype.str.encode()
        f.write(struct.pack("<qq", len(dtype), a.ndim) + dtype)
        f.write(np.asarray(a.shape, dtype="<i8").tobytes())
        if a.dtype == object:
            items = [s if isinstance(s, bytes) else str(s).encode() for s in a.ravel()]
            f.write(np.asarray([len(s) for s in items], dtype="<i8").tobytes())
            f.write(b"".join(items))
        else:
            f.write(np.ascontiguousarray(a).tobytes())


_MAX_RANK = 64


def _read_exact(f: BinaryIO, n: int, path: str, what: str = "data") -> bytes:
    """`n` bytes; a length field past the end of the file is refused before allocating."""
    start = f.tell()
    left = os.fstat(f.fileno()).st_size - start
    if n < 0 or n > left:
        raise errors.DataLossError(
            None, "cache", f"cache file {path} is corrupt or truncated: {what} at offset "
            f"{start} claims {n} bytes, but {left} remain")
    data = f.read(n)
    if len(data) != n:
        raise errors.DataLossError(None, "cache",
                                   f"cache file {path} is truncated at offset {f.tell()}")
    return data


def read_cache(path: str) -> Iterator[Any]:
    """Elements stored by a completed file cache; DataLossError for any malformed field."""
    with open(path, "rb") as f:
        if f.read(len(_MAGIC)) != _MAGIC:
            raise errors.DataLossError(None, "cache", f"{path} is not a tapeflow cache file")
        (n,) = struct.unpack("<q", _read_exact(f, 8, path, "the header length"))
        try:
            header = json.loads(_read_exact(f, n, path, "the header"))
            empty = header["empty"]
            template = None if empty else _template(header["structure"])
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise errors.DataLossError(
                None, "cache", f"cache file {path} has a malformed header ({e!r})") from None
        if empty:
            return
        n_leaves = len(structure.flatten(template))
        while True:
            head = f.read(16)
            if not head:
                return
            leaves = []
            for i in range(n_leaves):
                if i:
                    head = _read_exact(f, 16, path, "a value's header")
                elif len(head) != 16:
                    raise errors.DataLossError(
                        None, "cache", f"cache file {path} is truncated at offset {f.tell()}")
                leaves.append(_read_leaf(f, head, path))
            yield structure.pack_like(template, leaves)


def _dtype(name: str, path: str) -> np.dtype:
    """A plain numeric or bool dtype (never object or structured: those could not be read)."""
    try:
        npd = np.dtype(name)
    except TypeError:
        npd = None
    if npd is None or npd.kind not in "biufc" or npd.fields is not None:
        raise errors.DataLossError(None, "cache",
                                   f"cache file {path} names an invalid dtype {name!r}")
    return npd


def _read_leaf(f: BinaryIO, head: bytes, path: str) -> np.ndarray:
    n_dtype, ndim = struct.unpack("<qq", head)
    if not 0 <= ndim <= _MAX_RANK or not 0 < n_dtype <= 16:
        raise errors.DataLossError(
            None, "cache", f"cache file {path} is corrupt: a value claims rank {ndim} and a "
            f"dtype name of {n_dtype} bytes")
    dtype = _read_exact(f, n_dtype, path, "a dtype name").decode("ascii", "replace")
    shape = tuple(int(d) for d in np.frombuffer(_read_exact(f, 8 * ndim, path, "a shape"),
                                                dtype="<i8"))
    if any(d < 0 for d in shape):
        raise errors.DataLossError(None, "cache",
                                   f"cache file {path} is corrupt: negative shape {shape}")
    count = math.prod(shape)  # Python ints: a hostile shape cannot overflow to a small number
    if dtype == "string":
        lengths = np.frombuffer(_read_exact(f, 8 * count, path, "string lengths"), dtype="<i8")
        if (lengths < 0).any():
            raise errors.DataLossError(None, "cache",
                                       f"cache file {path} is corrupt: a negative string length")
        blob = _read_exact(f, sum(int(n) for n in lengths), path, "string bytes")
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        out = np.empty(count, dtype=object)
        for i in range(count):
            out[i] = blob[offsets[i]:offsets[i + 1]]
        return out.reshape(shape)
    npd = _dtype(dtype, path)
    data = _read_exact(f, count * npd.itemsize, path, f"a {dtype}{list(shape)} value")
    return np.frombuffer(data, dtype=npd).reshape(shape)
