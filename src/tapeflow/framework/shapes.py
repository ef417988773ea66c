"""TensorShape: a possibly partially-known shape (``None`` marks an unknown dimension)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


class Dimension:
    """Compatibility shim for TF1 code that calls ``.value`` on a dimension."""

    def __init__(self, value):
        self.value = value


class TensorShape:
    """A shape whose rank and dimensions may be unknown (``TensorShape(None)``, ``[None, 3]``)."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Any = ()):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, int):
            self._dims = (int(dims),)
        else:
            self._dims = tuple(None if d is None else _dim(d) for d in dims)

    @property
    def rank(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self) -> tuple | None:
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other: Any) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other: Any) -> TensorShape:
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def most_specific_common_supertype(self, others: Iterable[Any]) -> TensorShape:
        """The shape that keeps the dims all shapes agree on and relaxes the rest to None."""
        result = self
        for o in others:
            o = as_shape(o)
            if result._dims is None or o._dims is None or len(result._dims) != len(o._dims):
                result = TensorShape(None)
                continue
            result = TensorShape([a if a == b else None for a, b in zip(result._dims, o._dims)])
        return result

    def concatenate(self, other: Any) -> TensorShape:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def with_rank(self, rank: int) -> TensorShape:
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __eq__(self, other: Any) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._dims)

    def __bool__(self) -> bool:
        return self._dims is not None

    def __add__(self, other: Any) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other: Any) -> TensorShape:
        return as_shape(other).concatenate(self)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({self._dims[0]},)"
        return "(" + ", ".join(str(d) for d in self._dims) + ")"


def _dim(d: Any) -> int | None:
    if isinstance(d, Dimension):
        return d.value
    if d is None:
        return None
    d = int(d)
    if d < 0:
        if d == -1:
            return None
        raise ValueError(f"Dimension {d} must be >= 0")
    return d


def as_shape(shape: Any) -> TensorShape:
    """Convert a list/tuple/TensorShape/None to a TensorShape."""
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape(shape)
