"""`tf.io.serialize_sparse`, `serialize_many_sparse`, `deserialize_many_sparse`: a SparseTensor as
three TensorProto strings (indices, values, dense_shape; TF's format), and back."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.io.tensor_proto import TensorProto, from_proto, to_proto
from tapeflow.sparse.tensor import SparseTensor


def _bytes(arr: np.ndarray) -> bytes:
    return to_proto(arr).SerializeToString()


def _objects(rows: list) -> np.ndarray:
    out = np.empty(len(rows), dtype=object)
    out[:] = rows
    return out


@op("SerializeSparse", shape=lambda i, v, s: ((3,), _dtypes.string))
def _serialize_sparse(indices, values, shape):
    return _objects([_bytes(indices), _bytes(values), _bytes(shape)])


@op("SerializeManySparse", shape=lambda i, v, s: ((None, 3), _dtypes.string))
def _serialize_many(indices, values, shape):
    rows = []
    for b in range(int(shape[0])):
        keep = indices[:, 0] == b
        rows.append([_bytes(indices[keep, 1:]), _bytes(values[keep]), _bytes(shape[1:])])
    out = np.empty((len(rows), 3), dtype=object)
    for r, row in enumerate(rows):
        out[r, :] = row
    return out


def _parse(data: bytes) -> np.ndarray:
    proto = TensorProto()
    proto.ParseFromString(data)
    return from_proto(proto)


def _many_rule(serialized, *, dtype, rank):
    width = None if rank is None else rank
    return [((None, width), _dtypes.int64), ((None,), dtype), ((width,), _dtypes.int64)]


@op("DeserializeManySparse", multi_output=True, shape=_many_rule)
def _deserialize_many(serialized, *, dtype, rank):
    if serialized.ndim != 2 or serialized.shape[1] != 3:
        raise errors.InvalidArgumentError(
            f"deserialize_many_sparse: serialized_sparse must be [N, 3], got "
            f"{list(serialized.shape)}")
    indices, values, shapes = [], [], []
    for b, (i, v, s) in enumerate(serialized.tolist()):
        idx, val, shp = _parse(i), _parse(v), _parse(s)
        if val.dtype != np.dtype(dtype._np):
            raise errors.InvalidArgumentError(
                f"deserialize_many_sparse: values have dtype {val.dtype}, expected {dtype.name}")
        indices.append(np.concatenate([np.full((len(idx), 1), b, np.int64),
                                       idx.reshape(-1, len(shp))], axis=1))
        values.append(val)
        shapes.append(shp)
    dims = {len(s) for s in shapes}
    if len(dims) > 1:
        raise errors.InvalidArgumentError("deserialize_many_sparse: ranks differ between rows")
    inner = np.max(np.stack(shapes), axis=0) if shapes else np.zeros(0, np.int64)
    all_idx = np.concatenate(indices) if indices else np.zeros((0, 1), np.int64)
    order = np.lexsort(all_idx.T[::-1]) if len(all_idx) else np.zeros(0, np.int64)
    all_val = np.concatenate(values) if values else np.zeros(0, dtype._np)
    shape = np.concatenate([[len(shapes)], inner]).astype(np.int64)
    return all_idx[order], all_val[order].astype(dtype._np), shape


def _sparse(sp: Any) -> SparseTensor:
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"expected a SparseTensor, got {type(sp).__name__}")
    return sp


@export("io.serialize_sparse")
def serialize_sparse(sp_input: Any, out_type: Any = _dtypes.string,
                     name: str | None = None) -> Any:
    """A [3] string vector: indices, values and dense_shape as TensorProto bytes."""
    sp = _sparse(sp_input)
    return apply(_serialize_sparse, sp.indices, sp.values, sp.dense_shape)


@export("io.serialize_many_sparse")
def serialize_many_sparse(sp_input: Any, out_type: Any = _dtypes.string,
                          name: str | None = None) -> Any:
    """[N, 3]: each row of the first dimension serialized as its own (rank - 1) SparseTensor."""
    sp = _sparse(sp_input)
    return apply(_serialize_many, sp.indices, sp.values, sp.dense_shape)


@export("io.deserialize_many_sparse")
def deserialize_many_sparse(serialized_sparse: Any, dtype: Any, rank: int | None = None,
                            name: str | None = None) -> SparseTensor:
    """The SparseTensor of serialize_many_sparse's [N, 3] rows: row i becomes batch entry i
    (the dense shape is the largest of the rows')."""
    data = convert_to_tensor(serialized_sparse, _dtypes.string)
    indices, values, shape = apply(_deserialize_many, data, dtype=_dtypes.as_dtype(dtype),
                                   rank=None if rank is None else int(rank))
    return SparseTensor(indices, values, shape)
