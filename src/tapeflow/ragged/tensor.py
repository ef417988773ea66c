"""``tf.RaggedTensor``: rows of different lengths as flat values plus row-partition vectors.

``RaggedTensor(values, row_splits)``: row ``i`` is ``values[row_splits[i]:row_splits[i+1]]``;
`values` is a dense tensor or another RaggedTensor (multiple ragged dims). Both parts are
ordinary tensors (eager or symbolic), so every method below is built from dense ops and works
eagerly, inside ``tf.function`` and with gradients (flowing to the flat values).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.composite import CompositeTensor, TypeSpec
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.ops import array_ops, gather_ops, math_ops
from tapeflow.ragged import primitives as prim


def _is_eager(*ts: Any) -> bool:
    return all(isinstance(t, EagerTensor) for t in ts)


def _splits_tensor(x: Any, dtype: Any = None) -> Tensor:
    t = x if isinstance(x, Tensor) else convert_to_tensor(x, dtype or _dtypes.int64)
    if not t.dtype.is_integer:
        raise TypeError(f"row partition must be int32 or int64, got {t.dtype.name}")
    return t


def _values_tensor(x: Any) -> Any:
    return x if isinstance(x, (Tensor, RaggedTensor)) else convert_to_tensor(x)


def _lengths_to_splits(lengths: Tensor) -> Tensor:
    from tapeflow.ops import reduce_ops

    zero = array_ops.zeros([1], lengths.dtype)
    return array_ops.concat([zero, reduce_ops.cumsum(lengths)], 0)


@export("RaggedTensor")
class RaggedTensor(CompositeTensor):
    """A tensor with one or more ragged dimensions (``tf.RaggedTensor``)."""

    def __init__(self, values: Any, row_splits: Any, internal: bool = False):
        if not internal:
            raise ValueError("RaggedTensor constructor is private: use "
                             "tf.RaggedTensor.from_row_splits(values, row_splits) or "
                             "tf.ragged.constant(...)")
        self._values = values
        self._row_splits = row_splits

    # --- constructors -------------------------------------------------------------------
    @classmethod
    def from_row_splits(cls, values: Any, row_splits: Any, name: str | None = None,
                        validate: bool = True) -> RaggedTensor:
        """Row i is values[row_splits[i]:row_splits[i+1]]."""
        values = _values_tensor(values)
        splits = _splits_tensor(row_splits)
        if validate and _is_eager(splits):
            s = splits._value
            n = _nvals(values)
            if s.ndim != 1 or s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0) or (
                    n is not None and s[-1] != n):
                raise errors.InvalidArgumentError(
                    f"RaggedTensor.from_row_splits: row_splits must be a non-empty, sorted "
                    f"vector starting at 0 and ending at nvals={n}, got {s.tolist()}\n"
                    f"{errors.user_line()}")
        return cls(values, splits, internal=True)

    @classmethod
    def from_row_lengths(cls, values: Any, row_lengths: Any, name: str | None = None,
                         validate: bool = True) -> RaggedTensor:
        lengths = _splits_tensor(row_lengths)
        return cls.from_row_splits(values, _lengths_to_splits(lengths), validate=validate)

    @classmethod
    def from_row_starts(cls, values: Any, row_starts: Any, name: str | None = None,
                        validate: bool = True) -> RaggedTensor:
        values = _values_tensor(values)
        starts = _splits_tensor(row_starts)
        n = math_ops.cast(_nvals_tensor(values), starts.dtype)
        return cls.from_row_splits(values, array_ops.concat(
            [starts, array_ops.reshape(n, [1])], 0), validate=validate)

    @classmethod
    def from_row_limits(cls, values: Any, row_limits: Any, name: str | None = None,
                        validate: bool = True) -> RaggedTensor:
        limits = _splits_tensor(row_limits)
        return cls.from_row_splits(values, array_ops.concat(
            [array_ops.zeros([1], limits.dtype), limits], 0), validate=validate)

    @classmethod
    def from_value_rowids(cls, values: Any, value_rowids: Any, nrows: Any = None,
                          name: str | None = None, validate: bool = True) -> RaggedTensor:
        """Value i belongs to row value_rowids[i] (sorted); `nrows` defaults to max + 1."""
        ids = _splits_tensor(value_rowids)
        if nrows is None:
            from tapeflow.ops import reduce_ops

            nrows = math_ops.maximum(reduce_ops.reduce_max(
                array_ops.concat([ids, convert_to_tensor([-1], ids.dtype)], 0)) + 1, 0)
        n = math_ops.cast(_splits_tensor(nrows, ids.dtype), ids.dtype)
        return cls.from_row_splits(values, apply(prim.splits_from_ids_kernel, ids, n),
                                   validate=validate)

    @classmethod
    def from_nested_row_splits(cls, flat_values: Any, nested_row_splits: Any,
                               name: str | None = None, validate: bool = True) -> RaggedTensor:
        result = _values_tensor(flat_values)
        for splits in reversed(list(nested_row_splits)):
            result = cls.from_row_splits(result, splits, validate=validate)
        return result

    @classmethod
    def from_nested_row_lengths(cls, flat_values: Any, nested_row_lengths: Any,
                                name: str | None = None, validate: bool = True) -> RaggedTensor:
        result = _values_tensor(flat_values)
        for lengths in reversed(list(nested_row_lengths)):
            result = cls.from_row_lengths(result, lengths, validate=validate)
        return result

    @classmethod
    def from_nested_value_rowids(cls, flat_values: Any, nested_value_rowids: Any,
                                 nested_nrows: Any = None, name: str | None = None,
                                 validate: bool = True) -> RaggedTensor:
        ids = list(nested_value_rowids)
        nrows = list(nested_nrows) if nested_nrows is not None else [None] * len(ids)
        result = _values_tensor(flat_values)
        for r, n in zip(reversed(ids), reversed(nrows)):
            result = cls.from_value_rowids(result, r, n, validate=validate)
        return result

    @classmethod
    def from_uniform_row_length(cls, values: Any, uniform_row_length: int,
                                nrows: Any = None, validate: bool = True,
                                name: str | None = None) -> RaggedTensor:
        values = _values_tensor(values)
        n = _nvals_tensor(values)
        step = math_ops.cast(convert_to_tensor(uniform_row_length), _dtypes.int64)
        n = math_ops.cast(n, _dtypes.int64)
        from tapeflow.ops.creation_ops import range_

        return cls.from_row_splits(values, range_(0, n + 1, step), validate=validate)

    @classmethod
    def from_tensor(cls, tensor: Any, lengths: Any = None, padding: Any = None,
                    ragged_rank: int = 1, name: str | None = None,
                    row_splits_dtype: Any = _dtypes.int64) -> RaggedTensor:
        """Rows of a dense tensor, cut to `lengths` or where trailing `padding` starts."""
        from tapeflow.ops import indexing_ops, reduce_ops

        t = convert_to_tensor(tensor) if not isinstance(tensor, Tensor) else tensor
        if ragged_rank > 1:
            inner = cls.from_tensor(_merge_outer(t), lengths=None, padding=None,
                                    ragged_rank=ragged_rank - 1,
                                    row_splits_dtype=row_splits_dtype)
            ncols = array_ops.shape(t, out_type=row_splits_dtype)[1]
            return cls.from_uniform_row_length(inner, ncols)
        shape = array_ops.shape(t, out_type=row_splits_dtype)
        nrows, ncols = shape[0], shape[1]
        if padding is not None:
            pad = convert_to_tensor(padding, t.dtype) if not isinstance(padding, Tensor) \
                else padding
            is_pad = math_ops.equal(t, pad)
            if t.shape.rank is not None and t.shape.rank > 2:
                is_pad = reduce_ops.reduce_all(is_pad, axis=list(range(2, t.shape.rank)))
            # a row's length: 1 + the last non-padding position (0 when all padding)
            keep = math_ops.cast(math_ops.logical_not(is_pad), row_splits_dtype)
            pos = math_ops.cast(array_ops.reshape(
                apply(prim.position_kernel, _uniform_splits(nrows, ncols)),
                array_ops.shape(keep)), row_splits_dtype) + 1
            lengths = reduce_ops.reduce_max(keep * pos, axis=1)
        elif lengths is not None:
            lengths = math_ops.cast(_splits_tensor(lengths), row_splits_dtype)
        else:
            flat = _merge_outer(t)
            return cls.from_row_splits(flat, _uniform_splits(nrows, ncols), validate=False)
        uniform = _uniform_splits(nrows, ncols)  # (run-time sizes: works traced too)
        mask = math_ops.less(apply(prim.position_kernel, uniform),
                             gather_ops.gather(lengths, apply(prim.row_ids_kernel, uniform)))
        values = indexing_ops.boolean_mask(_merge_outer(t), mask)
        return cls.from_row_lengths(values, lengths, validate=False)

    @classmethod
    def from_sparse(cls, st_input: Any, name: str | None = None,
                    row_splits_dtype: Any = _dtypes.int64) -> RaggedTensor:
        """A 2-D SparseTensor (indices in row-major order) as rows of its values."""
        if st_input.shape.rank != 2:
            raise ValueError(f"RaggedTensor.from_sparse needs a rank-2 SparseTensor, got rank "
                             f"{st_input.shape.rank}")
        rows = math_ops.cast(st_input.indices[:, 0], row_splits_dtype)
        nrows = math_ops.cast(st_input.dense_shape[0], row_splits_dtype)
        out = cls.from_value_rowids(st_input.values, rows, nrows, validate=False)
        index = st_input.indices
        if isinstance(index, EagerTensor) and isinstance(out.row_splits, EagerTensor):
            position = apply(prim.position_kernel, out.row_splits)._value
            if not np.array_equal(index._value[:, 1], position):
                raise errors.InvalidArgumentError(
                    f"RaggedTensor.from_sparse: SparseTensor is not right-ragged (each row's "
                    f"columns must be 0, 1, 2... in order): indices {index._value.tolist()}\n"
                    f"{errors.user_line()}")
        return out

    # --- structure ----------------------------------------------------------------------
    @property
    def values(self) -> Any:
        return self._values

    @property
    def row_splits(self) -> Tensor:
        return self._row_splits

    @property
    def flat_values(self) -> Tensor:
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def nested_row_splits(self) -> tuple:
        out = [self._row_splits]
        v = self._values
        while isinstance(v, RaggedTensor):
            out.append(v._row_splits)
            v = v._values
        return tuple(out)

    @property
    def ragged_rank(self) -> int:
        return len(self.nested_row_splits)

    @property
    def dtype(self) -> _dtypes.DType:
        return self.flat_values.dtype

    @property
    def row_splits_dtype(self) -> _dtypes.DType:
        return self._row_splits.dtype

    @property
    def shape(self) -> TensorShape:
        n = self._row_splits.shape.as_tuple()
        nrows = None if n is None or n[0] is None else n[0] - 1
        inner = self.flat_values.shape.as_tuple()
        tail = (None,) * (len(inner) - 1) if inner is None else inner[1:]
        return TensorShape((nrows,) + (None,) * self.ragged_rank + tuple(tail))

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def _type_spec(self) -> RaggedTensorSpec:
        return RaggedTensorSpec(self.shape, self.dtype, self.ragged_rank, self.row_splits_dtype,
                                flat_values_spec=None)

    # --- row partition queries --------------------------------------------------------
    def row_lengths(self, axis: int = 1, name: str | None = None) -> Any:
        if axis == 1:
            s = self._row_splits
            return s[1:] - s[:-1]
        if axis > 1 and isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.row_lengths(axis - 1))
        raise ValueError(f"row_lengths: axis {axis} is not a ragged dimension")

    def nested_row_lengths(self, name: str | None = None) -> tuple:
        return tuple(s[1:] - s[:-1] for s in self.nested_row_splits)

    def nrows(self, out_type: Any = None, name: str | None = None) -> Tensor:
        n = array_ops.shape(self._row_splits, out_type=self.row_splits_dtype)[0] - 1
        return n if out_type is None else math_ops.cast(n, out_type)

    def row_starts(self, name: str | None = None) -> Tensor:
        return self._row_splits[:-1]

    def row_limits(self, name: str | None = None) -> Tensor:
        return self._row_splits[1:]

    def value_rowids(self, name: str | None = None) -> Tensor:
        return apply(prim.row_ids_kernel, self._row_splits)

    def nested_value_rowids(self, name: str | None = None) -> tuple:
        return tuple(apply(prim.row_ids_kernel, s) for s in self.nested_row_splits)

    def bounding_shape(self, axis: Any = None, name: str | None = None,
                       out_type: Any = None) -> Tensor:
        """[nrows, longest row, ...] of the smallest dense tensor holding this one."""
        from tapeflow.ops import reduce_ops

        dtype = out_type or self.row_splits_dtype
        dims = [self.nrows(out_type=dtype)]
        for s in self.nested_row_splits:
            lengths = s[1:] - s[:-1]
            padded = array_ops.concat([math_ops.cast(lengths, dtype),
                                       array_ops.zeros([1], dtype)], 0)
            dims.append(reduce_ops.reduce_max(padded))
        inner = array_ops.shape(self.flat_values, out_type=dtype)[1:]
        out = array_ops.concat([array_ops.stack(dims), inner], 0)
        return out if axis is None else gather_ops.gather(out, axis)

    # --- conversions --------------------------------------------------------------------
    def to_tensor(self, default_value: Any = None, name: str | None = None,
                  shape: Any = None) -> Tensor:
        """Dense, padded with `default_value` (0 / b'') to the bounding shape or `shape`."""
        flat = self.flat_values
        if default_value is None:
            default_value = b"" if flat.dtype is _dtypes.string else 0
        default = default_value if isinstance(default_value, Tensor) else convert_to_tensor(
            default_value, flat.dtype)
        if default.dtype is not flat.dtype:
            default = math_ops.cast(default, flat.dtype)
        dims = None
        if shape is not None:
            s = as_shape(shape).as_tuple()
            dims = None if s is None else tuple(s[:self.ragged_rank + 1])
        return apply(prim._to_dense, flat, default, *self.nested_row_splits, shape=dims)

    def to_list(self) -> list:
        """Nested Python lists (eager only)."""
        flat = self.flat_values
        if not isinstance(flat, EagerTensor):
            raise ValueError("RaggedTensor.to_list() needs an eager RaggedTensor; inside "
                             "tf.function return it and call to_list() on the result")
        return _nested_list(flat._value.tolist(), [s._value for s in self.nested_row_splits])

    def numpy(self) -> np.ndarray:
        """An object array of rows (NumPy arrays), as TensorFlow returns."""
        rows = [np.asarray(r) for r in _rows_arrays(self)]
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return out

    def to_sparse(self, name: str | None = None) -> Any:
        """A SparseTensor of every entry, in row-major order (built from ops: traces too)."""
        from tapeflow.sparse.tensor import SparseTensor

        columns = _entry_index(self)
        flat = self.flat_values
        inner = flat.shape.as_tuple()[1:]
        if inner:  # uniform inner dims: each entry's index grid
            if any(d is None for d in inner):
                raise ValueError(f"RaggedTensor.to_sparse: the inner dims of {self.shape} must "
                                 f"be known")
            from tapeflow.ops.creation_ops import range_

            size = int(np.prod(inner))
            grid = convert_to_tensor(np.indices(inner).reshape(len(inner), -1).T, _dtypes.int64)
            nvals = array_ops.shape(flat, out_type=_dtypes.int64)[0]
            entry = range_(0, nvals * size, dtype=_dtypes.int64)  # one per scalar
            owner, cell = entry // size, math_ops.floormod(entry, size)
            columns = [gather_ops.gather(c, owner) for c in columns]
            columns += [gather_ops.gather(grid[:, i], cell) for i in range(len(inner))]
        index = array_ops.stack(columns, axis=1)
        return SparseTensor(index, array_ops.reshape(flat, [-1]),
                            math_ops.cast(self.bounding_shape(), _dtypes.int64))

    # --- derived tensors ----------------------------------------------------------------
    def with_values(self, new_values: Any) -> RaggedTensor:
        return RaggedTensor(_values_tensor(new_values), self._row_splits, internal=True)

    def with_flat_values(self, new_values: Any) -> RaggedTensor:
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype: Any) -> RaggedTensor:
        dtype = _dtypes.as_dtype(dtype)
        values = self._values
        if isinstance(values, RaggedTensor):
            values = values.with_row_splits_dtype(dtype)
        return RaggedTensor(values, math_ops.cast(self._row_splits, dtype), internal=True)

    def merge_dims(self, outer_axis: int, inner_axis: int) -> Any:
        """Merge dims outer_axis..inner_axis into one (axis 0 with 1 gives the values)."""
        rank = self.shape.rank
        if outer_axis < 0:
            outer_axis += rank
        if inner_axis < 0:
            inner_axis += rank
        if outer_axis == inner_axis:
            return self
        if outer_axis == 0:
            values = self._values
            result = values
            for _ in range(inner_axis - 1):
                result = result.merge_dims(0, 1) if isinstance(result, RaggedTensor) else \
                    _merge_outer(result)
            return result
        return self.with_values(self._values.merge_dims(outer_axis - 1, inner_axis - 1)
                                if isinstance(self._values, RaggedTensor)
                                else _merge_dense(self._values, outer_axis - 1, inner_axis - 1))

    # --- indexing -----------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        from tapeflow.ragged import indexing

        return indexing.getitem(self, key)

    def __len__(self) -> int:
        n = self.shape[0]
        if n is None:
            raise TypeError("len() of a RaggedTensor with an unknown number of rows")
        return n

    def __iter__(self):
        yield from _rows(self)

    def __repr__(self) -> str:
        if isinstance(self.flat_values, EagerTensor):
            return f"<tf.RaggedTensor {self.to_list()}>"
        return (f"tf.RaggedTensor(values={self._values!r}, row_splits={self._row_splits!r})")

    def __bool__(self) -> bool:
        raise TypeError("The truth value of a RaggedTensor is ambiguous")

    __hash__ = None  # elementwise __eq__ (installed with the operators)

    @classmethod
    def _apply_elementwise(cls, op: Any, inputs: tuple, attrs: dict) -> Any:
        from tapeflow.ragged import dispatch

        return dispatch.elementwise(op, inputs, attrs)


def _entry_index(rt: RaggedTensor) -> list:
    """Int64 columns [outer row, position, inner position...] of every flat value."""
    columns: list = []
    for splits in reversed(rt.nested_row_splits):  # innermost partition first
        rows = math_ops.cast(apply(prim.row_ids_kernel, splits), _dtypes.int64)
        pos = math_ops.cast(apply(prim.position_kernel, splits), _dtypes.int64)
        if not columns:
            columns = [rows, pos]
        else:  # columns[0] indexes this partition's values: map it to (row, position)
            outer = columns[0]
            columns = [gather_ops.gather(rows, outer), gather_ops.gather(pos, outer)] + \
                columns[1:]
    return columns


def _nvals(values: Any) -> int | None:
    if isinstance(values, RaggedTensor):
        n = values._row_splits.shape.as_tuple()
        return None if n is None or n[0] is None else n[0] - 1
    dims = values.shape.as_tuple()
    return None if dims is None or not dims else dims[0]


def _nvals_tensor(values: Any) -> Tensor:
    if isinstance(values, RaggedTensor):
        return values.nrows()
    return array_ops.shape(values, out_type=_dtypes.int64)[0]


def _uniform_splits(nrows: Tensor, ncols: Tensor) -> Tensor:
    from tapeflow.ops.creation_ops import range_

    return math_ops.cast(range_(0, nrows + 1), ncols.dtype) * ncols


def _merge_outer(t: Tensor) -> Tensor:
    shape = array_ops.shape(t)
    return array_ops.reshape(t, array_ops.concat([[-1], shape[2:]], 0))


def _merge_dense(t: Tensor, outer: int, inner: int) -> Tensor:
    shape = array_ops.shape(t)
    from tapeflow.ops import reduce_ops

    merged = reduce_ops.reduce_prod(shape[outer:inner + 1], keepdims=True)
    return array_ops.reshape(t, array_ops.concat([shape[:outer], merged, shape[inner + 1:]], 0))


def _nested_list(flat: list, splits: list) -> list:
    rows = flat
    for s in reversed(splits):
        rows = [rows[s[i]:s[i + 1]] for i in range(len(s) - 1)]
    return rows


def _rows(rt: RaggedTensor) -> list:
    s = rt._row_splits._value
    return [rt._values[int(s[i]):int(s[i + 1])] for i in range(len(s) - 1)]


def _rows_arrays(rt: RaggedTensor) -> list:
    return [r.numpy() for r in _rows(rt)]


@export("RaggedTensorSpec")
class RaggedTensorSpec(TypeSpec):
    """The type of a RaggedTensor: shape (ragged dims None), dtype, ragged_rank, splits dtype."""

    value_type = RaggedTensor

    def __init__(self, shape: Any = None, dtype: Any = _dtypes.float32,
                 ragged_rank: int | None = None, row_splits_dtype: Any = _dtypes.int64,
                 flat_values_spec: Any = None):
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        rank = self._shape.rank
        if ragged_rank is None:
            if rank is None:
                raise ValueError("RaggedTensorSpec: give ragged_rank when the rank is unknown")
            ragged_rank = rank - 1
        self._ragged_rank = ragged_rank
        self._row_splits_dtype = _dtypes.as_dtype(row_splits_dtype)
        self._flat_values_spec = flat_values_spec

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ragged_rank = property(lambda self: self._ragged_rank)
    row_splits_dtype = property(lambda self: self._row_splits_dtype)
    flat_values_spec = property(lambda self: self._flat_values_spec)

    def _key(self) -> tuple:
        return (RaggedTensorSpec, self._dtype, self._ragged_rank, self._row_splits_dtype)

    def _component_specs(self) -> list:
        dims = self._shape.as_tuple()
        if self._flat_values_spec is not None:
            flat = self._flat_values_spec
        else:
            inner = () if dims is None else dims[self._ragged_rank + 1:]
            flat = TensorSpec((None,) + tuple(inner), self._dtype)
        nrows = None if dims is None or dims[0] is None else dims[0] + 1
        splits = [TensorSpec([nrows], self._row_splits_dtype)]
        splits += [TensorSpec([None], self._row_splits_dtype)] * (self._ragged_rank - 1)
        return [flat] + splits

    def _to_components(self, value: Any) -> list:
        return [value.flat_values] + list(value.nested_row_splits)

    def _from_components(self, components: list) -> Any:
        flat, *splits = components
        if not splits:
            return flat
        return RaggedTensor.from_nested_row_splits(flat, splits, validate=False)

    @classmethod
    def from_value(cls, value: RaggedTensor) -> RaggedTensorSpec:
        return value._type_spec

    def __repr__(self) -> str:
        return (f"RaggedTensorSpec({self._shape}, tf.{self._dtype.name}, {self._ragged_rank}, "
                f"tf.{self._row_splits_dtype.name})")
