"""`Dataset.save` / `Dataset.load` and `tf.data.experimental.snapshot`: elements on disk.

A saved dataset is a directory: `dataset_spec.json` (format version, the element structure with
each component's dtype and shape, the shard files and their element counts) and shard files
in the TFRecord framing (`shard_00000.tfrecord`, optionally GZIP), one record per element.
A record holds each component in flattened order: its rank, its dims (int64) and its bytes;
string components hold their lengths, then their bytes. Nothing in these files is executed
(no pickle), every record is CRC-checked, and a damaged or truncated file raises DataLossError
naming it.

Writes are atomic: everything goes to a temporary directory next to the target, renamed into
place only when complete, so a crash leaves either the old dataset or none, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow.data import structure
from tapeflow.data.dataset import Dataset
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.io import tfrecord

FORMAT = "tapeflow.data.save"
VERSION = 1
SPEC_FILE = "dataset_spec.json"


# ---- element structure <-> JSON --------------------------------------------------------------
def _spec_to_json(spec: Any) -> Any:
    if isinstance(spec, dict):
        return {"dict": {k: _spec_to_json(v) for k, v in spec.items()}}
    if isinstance(spec, tuple):
        return {"tuple": [_spec_to_json(v) for v in spec]}
    if not isinstance(spec, TensorSpec):
        raise errors.InvalidArgumentError(
            f"Dataset.save: components of type {type(spec).__name__} cannot be saved (only "
            f"tensors)\n{errors.user_line()}")
    return {"dtype": spec.dtype.name, "shape": spec.shape.as_list()
            if spec.shape.rank is not None else None}


def _spec_from_json(data: Any, where: str) -> Any:
    try:
        if "dict" in data:
            return {k: _spec_from_json(v, where) for k, v in data["dict"].items()}
        if "tuple" in data:
            return tuple(_spec_from_json(v, where) for v in data["tuple"])
        return TensorSpec(data["shape"], _dtypes.as_dtype(data["dtype"]))
    except (KeyError, TypeError, ValueError) as e:
        raise errors.DataLossError(f"{where}: malformed element spec ({e})") from None


# ---- one element <-> one record --------------------------------------------------------------
def _encode(element: Any) -> bytes:
    parts = []
    for a in structure.flatten(element):
        if not isinstance(a, np.ndarray):
            raise errors.InvalidArgumentError(
                f"Dataset.save: a component of type {type(a).__name__} cannot be saved")
        parts.append(struct.pack("<B", a.ndim) + np.asarray(a.shape, "<i8").tobytes())
        if a.dtype == object:
            items = [v if isinstance(v, bytes) else str(v).encode() for v in a.ravel().tolist()]
            parts.append(np.asarray([len(v) for v in items], "<i8").tobytes() + b"".join(items))
        else:
            parts.append(np.ascontiguousarray(a, a.dtype.newbyteorder("<")).tobytes())
    return b"".join(parts)


def _decode(record: bytes, leaves: list, template: Any, where: str) -> Any:
    out, pos = [], 0
    try:
        for spec in leaves:
            ndim = record[pos]
            shape = tuple(np.frombuffer(record, "<i8", ndim, pos + 1).tolist())
            pos += 1 + 8 * ndim
            count = int(np.prod(shape)) if shape else 1
            if spec.dtype is _dtypes.string:
                lengths = np.frombuffer(record, "<i8", count, pos).tolist()
                pos += 8 * count
                values = np.empty(count, dtype=object)
                for i, n in enumerate(lengths):
                    values[i] = record[pos:pos + n]
                    pos += n
                out.append(values.reshape(shape))
            else:
                dtype = np.dtype(spec.dtype._np).newbyteorder("<")
                a = np.frombuffer(record, dtype, count, pos).reshape(shape)
                out.append(a.astype(dtype.newbyteorder("="), copy=True))
                pos += count * dtype.itemsize
    except (IndexError, ValueError):
        raise errors.DataLossError(f"{where}: a record does not match the saved element spec") \
            from None
    if pos != len(record):
        raise errors.DataLossError(f"{where}: a record has {len(record) - pos} unexpected bytes")
    return structure.pack_like(template, out)


def _compression(compression: str | None) -> str:
    value = (compression or "").upper()
    if value not in ("", "GZIP"):
        raise errors.InvalidArgumentError(
            f"compression must be None or 'GZIP', got {compression!r}\n{errors.user_line()}")
    return value


# ---- save --------------------------------------------------------------------------------------
def write(dataset: Dataset, path: str, compression: str | None = None,
          shard_func: Callable | None = None) -> None:
    """Write every element of `dataset` under `path`, atomically."""
    path = os.fspath(path)
    compression = _compression(compression)
    spec = dataset.element_spec
    _spec_to_json(spec)   # refuse what cannot be saved before writing anything
    shapes: list | None = None   # per component: the dims seen so far (None where they vary)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.tmp-", dir=parent)
    try:
        writers: dict[int, Any] = {}
        counts: dict[int, int] = {}
        options = tfrecord.TFRecordOptions(compression)
        for element in dataset._iterate(_context(dataset)):
            shard = 0 if shard_func is None else _shard_of(shard_func, element)
            if shard not in writers:
                writers[shard] = tfrecord.TFRecordWriter(
                    os.path.join(tmp, f"shard_{shard:05d}.tfrecord"), options)
                counts[shard] = 0
            writers[shard].write(_encode(element))
            counts[shard] += 1
            shapes = _seen_shapes(shapes, element)
        for w in writers.values():
            w.close()
        meta = {"format": FORMAT, "version": VERSION, "compression": compression,
                "element_spec": _spec_to_json(_relaxed(spec, shapes)),
                "shards": [{"file": f"shard_{s:05d}.tfrecord", "elements": counts[s]}
                           for s in sorted(counts)]}
        with open(os.path.join(tmp, SPEC_FILE), "w") as f:
            json.dump(meta, f)
        _replace_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _seen_shapes(shapes: list | None, element: Any) -> list:
    """Per component, the dims all elements so far share (None where they differ; the whole
    entry None where even the rank differs)."""
    now = [list(a.shape) for a in structure.flatten(element)]
    if shapes is None:
        return now
    for i, shape in enumerate(now):
        seen = shapes[i]
        if seen is not None and len(seen) != len(shape):
            shapes[i] = None
        elif seen is not None:
            shapes[i] = [d if d == e else None for d, e in zip(seen, shape)]
    return shapes


def _relaxed(spec: Any, shapes: list | None) -> Any:
    """The element spec with the dims the saved elements showed."""
    if shapes is None:
        return spec
    leaves = [TensorSpec(s, t.dtype) for s, t in zip(shapes, structure.flatten(spec))]
    return structure.pack_like(spec, leaves)


def _shard_of(shard_func: Callable, element: Any) -> int:
    value = structure.to_array(structure.call_with_element(shard_func, element))
    if value.shape != () or value.dtype.kind not in "iu" or int(value) < 0:
        raise errors.InvalidArgumentError(
            f"shard_func must return a non-negative integer scalar, got {value.dtype} "
            f"{list(value.shape)}")
    return int(value)


def _replace_dir(tmp: str, path: str) -> None:
    """Put the finished directory `tmp` at `path`, replacing what was there."""
    if os.path.lexists(path):
        old = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.old-",
                               dir=os.path.dirname(os.path.abspath(path)))
        os.replace(path, os.path.join(old, "d"))
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)


def _context(dataset: Dataset) -> Any:
    from tapeflow.data.iterator import IterContext
    return IterContext(dataset.options())


# ---- load --------------------------------------------------------------------------------------
def read_meta(path: str) -> dict:
    """The checked contents of a saved dataset's spec file."""
    spec_path = os.path.join(os.fspath(path), SPEC_FILE)
    if not os.path.isfile(spec_path):
        raise errors.NotFoundError(
            f"Dataset.load: {path} is not a saved dataset (no {SPEC_FILE})")
    try:
        with open(spec_path) as f:
            meta = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.DataLossError(f"{spec_path}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise errors.DataLossError(f"{spec_path}: not a tapeflow saved dataset")
    if meta.get("version") != VERSION:
        raise errors.DataLossError(f"{spec_path}: format version {meta.get('version')}, this "
                                   f"tapeflow reads version {VERSION}")
    shards = meta.get("shards")
    if not isinstance(shards, list) or not all(
            isinstance(s, dict) and isinstance(s.get("file"), str)
            and os.path.basename(s["file"]) == s["file"]
            and isinstance(s.get("elements"), int) and s["elements"] >= 0 for s in shards):
        raise errors.DataLossError(f"{spec_path}: malformed shard list (each entry needs a "
                                   f"file name in the directory and an element count)")
    if "element_spec" not in meta:
        raise errors.DataLossError(f"{spec_path}: no element_spec")
    for shard in shards:
        if not os.path.isfile(os.path.join(path, shard["file"])):
            raise errors.DataLossError(f"{path}: shard file {shard['file']} is missing")
    return meta


class LoadDataset(Dataset):
    """The elements of a saved dataset, shard after shard."""

    def __init__(self, path: str, element_spec: Any = None, compression: str | None = None):
        self._path = os.fspath(path)
        meta = read_meta(self._path)
        self._meta = meta
        saved = _spec_from_json(meta["element_spec"], os.path.join(self._path, SPEC_FILE))
        if element_spec is not None:
            try:
                structure.assert_same_structure(element_spec, saved, "Dataset.load")
            except TypeError as e:
                raise errors.InvalidArgumentError(f"{self._path}: {e}") from None
            for want, have in zip(structure.flatten(element_spec), structure.flatten(saved)):
                if want.dtype is not have.dtype:
                    raise errors.InvalidArgumentError(
                        f"Dataset.load({self._path}): element_spec says {want.dtype.name}, the "
                        f"saved data is {have.dtype.name}")
        self._spec_value = saved
        self._compression = meta.get("compression", "")
        if compression is not None and _compression(compression) != self._compression:
            raise errors.InvalidArgumentError(
                f"Dataset.load({self._path}): saved with compression "
                f"{self._compression or None!r}, asked for {compression!r}")

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        leaves = structure.flatten(self._spec_value)
        for shard in self._meta["shards"]:
            file = os.path.join(self._path, shard["file"])
            n = 0
            for record in tfrecord.tf_record_iterator(file, self._compression):
                yield _decode(record, leaves, self._spec_value, file)
                n += 1
            if n != shard["elements"]:
                raise errors.DataLossError(
                    f"{file}: {n} elements, the spec file says {shard['elements']} (truncated?)")

    def _compute_spec(self) -> Any:
        return self._spec_value

    def _cardinality(self) -> int:
        return sum(s["elements"] for s in self._meta["shards"])


def load(path: str, element_spec: Any = None, compression: str | None = None,
         reader_func: Callable | None = None) -> Dataset:
    """`Dataset.load`: the saved elements. One shard (no `shard_func`) comes back in the order
    saved; several are read as TensorFlow's default `reader_func` reads them (interleaved one
    element at a time, as many at once as the machine has cores, in shard order), unless
    `reader_func(shards)` says otherwise."""
    dataset = LoadDataset(path, element_spec, compression)
    count = len(dataset._meta["shards"])
    if reader_func is None and count <= 1:
        return dataset
    shards = _ShardsDataset([_ShardDataset(dataset, i) for i in range(count)])
    if reader_func is None:
        return _Interleaved(dataset, shards)
    return reader_func(shards)


class _Interleaved(Dataset):
    """TensorFlow's default shard order, with the saved dataset's spec and cardinality."""

    def __init__(self, whole: LoadDataset, shards: Dataset):
        self._whole = whole
        self._inputs = (shards.interleave(lambda shard: shard,
                                          cycle_length=os.cpu_count() or 1, block_length=1),)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        return self._inputs[0]._iterate(ctx)

    def _compute_spec(self) -> Any:
        return self._whole.element_spec

    def _cardinality(self) -> int:
        return self._whole._cardinality()


class _ShardDataset(LoadDataset):
    """One shard of a saved dataset."""

    def __init__(self, whole: LoadDataset, index: int):
        self.__dict__.update(whole.__dict__)
        self._meta = dict(whole._meta, shards=[whole._meta["shards"][index]])


class _ShardsDataset(Dataset):
    """A dataset whose elements are the shard datasets (what `reader_func` receives)."""

    def __init__(self, shards: list):
        self._shards = shards

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        yield from self._shards

    def _compute_spec(self) -> Any:
        from tapeflow.data.batching import DatasetSpec
        return DatasetSpec(self._shards[0].element_spec) if self._shards else None

    def _cardinality(self) -> int:
        return len(self._shards)


# ---- snapshot ---------------------------------------------------------------------------------
class SnapshotDataset(Dataset):
    """Reads `path` when it holds a complete snapshot of this element structure; otherwise
    runs the input, passing elements through while writing them, and publishes the snapshot
    (atomically) only when the input was read to its end."""

    def __init__(self, input_dataset: Dataset, path: str, compression: str | None):
        self._inputs = (input_dataset,)
        self._path = os.fspath(path)
        self._compression = _compression(None if compression in (None, "AUTO") else compression)

    def _complete(self) -> bool:
        if not os.path.isfile(os.path.join(self._path, SPEC_FILE)):
            return False
        meta = read_meta(self._path)
        saved = _spec_from_json(meta["element_spec"], os.path.join(self._path, SPEC_FILE))
        if repr(saved) != repr(self.element_spec):
            raise errors.InvalidArgumentError(
                f"snapshot({self._path}): the snapshot holds elements {saved}, this pipeline "
                f"makes {self.element_spec}; use another path")
        return True

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        if self._complete():
            yield from LoadDataset(self._path)._iterate(ctx)
            return
        parent = os.path.dirname(os.path.abspath(self._path))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(self._path)}.tmp-", dir=parent)
        writer = tfrecord.TFRecordWriter(os.path.join(tmp, "shard_00000.tfrecord"),
                                         tfrecord.TFRecordOptions(self._compression))
        source = self._inputs[0]._iterate(ctx)
        n, finished = 0, False
        try:
            for element in source:
                writer.write(_encode(element))
                n += 1
                yield element
            finished = True
        finally:
            source.close()
            writer.close()
            if finished and not self._complete_now(tmp, n):
                shutil.rmtree(tmp, ignore_errors=True)
            elif not finished:
                shutil.rmtree(tmp, ignore_errors=True)

    def _complete_now(self, tmp: str, n: int) -> bool:
        meta = {"format": FORMAT, "version": VERSION, "compression": self._compression,
                "element_spec": _spec_to_json(self.element_spec),
                "shards": [{"file": "shard_00000.tfrecord", "elements": n}]}
        with open(os.path.join(tmp, SPEC_FILE), "w") as f:
            json.dump(meta, f)
        if os.path.isfile(os.path.join(self._path, SPEC_FILE)):
            return False   # another iterator finished first: keep its snapshot
        _replace_dir(tmp, self._path)
        return True

    def _compute_spec(self) -> Any:
        return self._inputs[0].element_spec

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()


def snapshot(path: str, compression: str | None = "AUTO", reader_func: Any = None,
             shard_func: Any = None) -> Callable[[Dataset], Dataset]:
    """`tf.data.experimental.snapshot`: a transformation for `Dataset.apply`."""
    return lambda dataset: SnapshotDataset(dataset, path, compression)
