"""``tf.IndexedSlices``: some rows of a tensor, as gradients of row lookups (gather) are.

The gradient of ``gather(params, indices)`` (axis 0) is one: the looked-up rows' gradients and
their indices, so an optimizer can update only those rows. The reverse-mode walker adds two of
them by concatenation and a dense gradient to one by densifying (TensorFlow's rules); an op's
gradient rule receives a dense tensor. ``GradientTape.gradient`` hands them out for Variable
sources (as TensorFlow does), and dense tensors for tensor sources (the internal callers:
function, cond and loop gradients, differentiate with respect to tensors and want tensors).

Converting one to a tensor adds the rows into zeros of `dense_shape` and warns, as TensorFlow
does, when the dense result is big or of unknown shape (it may use a lot of memory). It is a
composite (``tf.IndexedSlicesSpec``), so ``tf.function`` returns and takes one as its component
tensors.
"""

from __future__ import annotations

import warnings
from typing import Any

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.composite import CompositeTensor, TypeSpec
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_spec import TensorSpec

# TensorFlow's threshold (elements) above which densifying an IndexedSlices warns
LARGE_SPARSE_NUM_ELEMENTS = 100_000_000


@export("IndexedSlices")
class IndexedSlices(CompositeTensor):
    """Rows `values[i]` at positions `indices[i]` of a tensor shaped `dense_shape`."""

    def __init__(self, values: Any, indices: Any, dense_shape: Any = None):
        from tapeflow.framework.constant import convert_to_tensor

        self._values = values if isinstance(values, Tensor) else convert_to_tensor(values)
        self._indices = indices if isinstance(indices, Tensor) else convert_to_tensor(indices)
        if dense_shape is not None and not isinstance(dense_shape, Tensor):
            dense_shape = convert_to_tensor(dense_shape, dtype_hint=self._indices.dtype)
        self._dense_shape = dense_shape
        self._like = None  # a traced tensor of the dense shape (static shape for `dense`)

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def dense_shape(self) -> Tensor | None:
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def _type_spec(self) -> IndexedSlicesSpec:
        shape = self._dense_shape
        return IndexedSlicesSpec(self.shape, self.dtype, self._indices.dtype,
                                 None if shape is None else shape.dtype, self._indices.shape)

    @property
    def shape(self):
        if self._dense_shape is None:
            return TensorShape(None)
        from tapeflow.ops.misc_ops import get_static_value

        static = get_static_value(self._dense_shape)
        if static is not None:
            return TensorShape([int(d) for d in static])
        return TensorShape([None] * (self._values.shape.rank or 0) or None)

    def __neg__(self) -> IndexedSlices:
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    # Scaling by a scalar keeps the rows sparse (a tapeflow convenience: TensorFlow's
    # IndexedSlices has no arithmetic, so code that unscales gradients, as a loss-scale
    # optimizer does, need not special-case them); anything else densifies.
    def _scaled(self, factor: Any, divide: bool = False) -> Any:
        from tapeflow.ops import math_ops

        shape = getattr(factor, "shape", ())
        if shape == () or getattr(shape, "rank", None) == 0:
            op = math_ops.divide if divide else math_ops.multiply
            out = IndexedSlices(op(self._values, factor), self._indices, self._dense_shape)
            out._like = self._like
            return out
        dense_value = densify(self)
        return dense_value / factor if divide else dense_value * factor

    def __mul__(self, factor: Any) -> Any:
        return self._scaled(factor)

    __rmul__ = __mul__

    def __truediv__(self, factor: Any) -> Any:
        return self._scaled(factor, divide=True)

    def _as_tensor(self) -> Tensor:
        return densify(self)

    def __array__(self, dtype=None, copy=None):
        arr = densify(self).numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __repr__(self) -> str:
        shape = None if self._dense_shape is None else self._dense_shape
        return (f"IndexedSlices(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={shape!r})")


@export("IndexedSlicesSpec")
class IndexedSlicesSpec(TypeSpec):
    """The type of an IndexedSlices: dense shape, dtypes, and whether it has a dense_shape."""

    value_type = IndexedSlices

    def __init__(self, shape: Any = None, dtype: Any = _dtypes.float32,
                 indices_dtype: Any = _dtypes.int64, dense_shape_dtype: Any = None,
                 indices_shape: Any = None):
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._indices_dtype = _dtypes.as_dtype(indices_dtype)
        self._dense_shape_dtype = (None if dense_shape_dtype is None
                                   else _dtypes.as_dtype(dense_shape_dtype))
        self._indices_shape = as_shape([None] if indices_shape is None else indices_shape)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)

    def _key(self) -> tuple:
        return (IndexedSlicesSpec, self._dtype, self._indices_dtype, self._dense_shape_dtype,
                self._shape.rank)

    def _component_specs(self) -> list:
        rows = self._shape.as_tuple()[1:] if self._shape.rank is not None else None
        values = TensorSpec(None if rows is None else self._indices_shape.as_tuple() + rows,
                            self._dtype)
        specs = [values, TensorSpec(self._indices_shape, self._indices_dtype)]
        if self._dense_shape_dtype is not None:
            specs.append(TensorSpec([self._shape.rank], self._dense_shape_dtype))
        return specs

    def _to_components(self, value: IndexedSlices) -> list:
        parts = [value.values, value.indices]
        return parts if value.dense_shape is None else parts + [value.dense_shape]

    def _from_components(self, components: list) -> IndexedSlices:
        return IndexedSlices(*components)

    def __repr__(self) -> str:
        return (f"IndexedSlicesSpec({self._shape}, tf.{self._dtype.name}, "
                f"tf.{self._indices_dtype.name})")


def densify(slices: IndexedSlices) -> Tensor:
    """The dense tensor: rows added into zeros (duplicate indices add up, as in TensorFlow)."""
    from tapeflow.ops import segment_ops

    shape = slices.shape
    if slices.dense_shape is None or not shape.is_fully_defined():
        warnings.warn("Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
                      "This may consume a large amount of memory.", UserWarning, stacklevel=3)
    elif shape.num_elements() > LARGE_SPARSE_NUM_ELEMENTS:
        warnings.warn(f"Converting sparse IndexedSlices({slices}) to a dense Tensor with "
                      f"{shape.num_elements()} elements. This may consume a large amount of "
                      "memory.", UserWarning, stacklevel=3)
    if slices.dense_shape is None:
        from tapeflow.ops import math_ops, reduce_ops

        rows = math_ops.add(reduce_ops.reduce_max(slices.indices), 1)
        return segment_ops.unsorted_segment_sum(slices.values, slices.indices, rows)
    return segment_ops.unsorted_segment_sum(slices.values, slices.indices,
                                            slices.dense_shape[0])


def add_gradients(a: Any, b: Any) -> Any:
    """The sum of two gradients, either of which may be an IndexedSlices: two IndexedSlices
    concatenate (duplicate rows stay separate, as in TensorFlow), a dense one densifies the
    other."""
    from tapeflow.ops import array_ops, math_ops

    sa, sb = type(a) is IndexedSlices, type(b) is IndexedSlices
    if not sa and not sb:
        return math_ops.add(a, b)
    if sa and sb:  # `b` comes from the earlier op (the walk runs backwards): TF's order
        out = IndexedSlices(array_ops.concat([b.values, a.values], 0),
                            array_ops.concat([math_ops.cast(b.indices, a.indices.dtype),
                                              a.indices], 0),
                            a.dense_shape)
        out._like = a._like
        return out
    return math_ops.add(dense(a), dense(b))


def dense(g: Any) -> Any:
    """`g` as a tensor (IndexedSlices densified, quietly: gradients known to be bounded)."""
    if type(g) is not IndexedSlices:
        return g
    if g._like is not None:  # traced: the row scatter whose output shape is static
        from tapeflow.ops import gather_ops

        return gather_ops.scatter_rows_like(g.values, g.indices, g._like)
    from tapeflow.ops import segment_ops

    return segment_ops.unsorted_segment_sum(g.values, g.indices, g.dense_shape[0])
