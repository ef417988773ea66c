"""``tf.linalg.LinearOperator``: a matrix described by its structure rather than its entries.

The base class gives every operator TensorFlow's interface (shape, matmul/matvec, solve/solvevec,
determinant, log_abs_determinant, to_dense, diag_part, trace, adjoint/H, inverse, cholesky,
eigvals, cond, add_to_tensor, ``@``) with dense fallbacks; a subclass defines `_shape` and
`_to_dense` and overrides what its structure makes cheaper (a diagonal solves by division, a
triangle by substitution, a Kronecker product's determinant from its factors'). Everything is
composed from differentiable tapeflow ops, so gradients reach an operator's parameters. The
structured operators (composition, block, Kronecker, low-rank, Toeplitz, circulant...) are in
linear_operator_structured.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.shapes import TensorShape
from tapeflow.ops import array_ops, complex_ops, math_ops, matrix_ops, reduce_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.linalg_ops import matmul as _matmul


def _conj(x: Any) -> Any:
    return complex_ops.conj(x) if x.dtype.is_complex else x


def _adj(x: Any) -> Any:
    return matrix_ops.adjoint(x)


def _dims(shape: Any) -> tuple:
    return tuple(TensorShape(shape).as_list()) if TensorShape(shape).rank is not None else ()


def _broadcast_batch(*shapes: tuple) -> tuple:
    """Broadcast batch shapes (None: unknown)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        known = {d for d in dims if d is not None and d != 1}
        out.append(known.pop() if len(known) == 1 else (None if None in dims else 1))
    return tuple(out)


@export("linalg.LinearOperator")
class LinearOperator:
    """Base class: a [batch..., M, N] linear map with hints about its structure."""

    def __init__(self, dtype: Any, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str | None = None,
                 parameters: dict | None = None):
        if is_positive_definite:
            if is_non_singular is False:
                raise ValueError("A positive definite matrix is always non-singular.")
            is_non_singular = True
        if is_non_singular:
            if is_square is False:
                raise ValueError("A non-singular matrix is always square.")
            is_square = True
        if is_self_adjoint:
            if is_square is False:
                raise ValueError("A self-adjoint matrix is always square.")
            is_square = True
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else None
        self._is_non_singular = is_non_singular
        self._is_self_adjoint = is_self_adjoint
        self._is_positive_definite = is_positive_definite
        self._is_square_hint = is_square
        self._name = name or type(self).__name__
        self._parameters = dict(parameters or {})

    # --- what a subclass defines ---------------------------------------------------------------
    def _shape(self) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} must define _shape")

    def _to_dense(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define _to_dense")

    # --- hints and shapes ------------------------------------------------------------------------
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)
    parameters = property(lambda self: dict(self._parameters))
    is_non_singular = property(lambda self: self._is_non_singular)
    is_self_adjoint = property(lambda self: self._is_self_adjoint)
    is_positive_definite = property(lambda self: self._is_positive_definite)

    @property
    def is_square(self) -> bool | None:
        m, n = self._shape()[-2:]
        if m is not None and n is not None:
            return m == n
        return self._is_square_hint

    @property
    def shape(self) -> TensorShape:
        return TensorShape(list(self._shape()))

    @property
    def batch_shape(self) -> TensorShape:
        return TensorShape(list(self._shape()[:-2]))

    @property
    def tensor_rank(self) -> int:
        return len(self._shape())

    @property
    def domain_dimension(self) -> Any:
        return self.shape[-1]

    @property
    def range_dimension(self) -> Any:
        return self.shape[-2]

    def shape_tensor(self, name: str = "shape_tensor") -> Any:
        if all(d is not None for d in self._shape()):
            return _tensor(np.asarray(self._shape(), np.int32))
        return array_ops.shape(self.to_dense())

    def batch_shape_tensor(self, name: str = "batch_shape_tensor") -> Any:
        return self.shape_tensor()[:-2]

    def tensor_rank_tensor(self, name: str = "tensor_rank_tensor") -> Any:
        return _tensor(np.int32(self.tensor_rank))

    def domain_dimension_tensor(self, name: str = "domain_dimension_tensor") -> Any:
        return self.shape_tensor()[-1]

    def range_dimension_tensor(self, name: str = "range_dimension_tensor") -> Any:
        return self.shape_tensor()[-2]

    # --- the operations ---------------------------------------------------------------------
    def to_dense(self, name: str = "to_dense") -> Any:
        """The operator as a dense [batch..., M, N] tensor."""
        return self._to_dense()

    def matmul(self, x: Any, adjoint: bool = False, adjoint_arg: bool = False,
               name: str = "matmul") -> Any:
        """A @ x (A^H with `adjoint`, x^H with `adjoint_arg`); an operator x gives a
        LinearOperatorComposition."""
        if isinstance(x, LinearOperator):
            from tapeflow.ops.linear_operator_structured import LinearOperatorComposition

            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            return LinearOperatorComposition([left, right])
        x = _tensor(x, self.dtype)
        return self._matmul(x, adjoint, adjoint_arg)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return _matmul(self.to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def matvec(self, x: Any, adjoint: bool = False, name: str = "matvec") -> Any:
        """A @ x for vectors x [batch..., N]."""
        out = self.matmul(array_ops.expand_dims(_tensor(x, self.dtype), -1), adjoint=adjoint)
        return array_ops.squeeze(out, -1)

    def __matmul__(self, other: Any) -> Any:
        return self.matmul(other)

    def _check_solvable(self, what: str) -> None:
        if self.is_non_singular is False:
            raise NotImplementedError(f"Exact {what} not implemented for an operator that is "
                                      "expected to be singular.")
        if self.is_square is False:
            raise NotImplementedError(f"Exact {what} not implemented for an operator that is "
                                      "expected to not be square.")

    def solve(self, rhs: Any, adjoint: bool = False, adjoint_arg: bool = False,
              name: str = "solve") -> Any:
        """X with A @ X = rhs (A^H with `adjoint`, rhs^H with `adjoint_arg`)."""
        self._check_solvable("solve")
        if isinstance(rhs, LinearOperator):
            left = self.adjoint() if adjoint else self
            right = rhs.adjoint() if adjoint_arg else rhs
            return left.inverse().matmul(right)
        rhs = _tensor(rhs, self.dtype)
        return self._solve(_adj(rhs) if adjoint_arg else rhs, adjoint)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return matrix_ops.solve(self.to_dense(), rhs, adjoint=adjoint)

    def solvevec(self, rhs: Any, adjoint: bool = False, name: str = "solve") -> Any:
        out = self.solve(array_ops.expand_dims(_tensor(rhs, self.dtype), -1), adjoint=adjoint)
        return array_ops.squeeze(out, -1)

    def _check_square(self, what: str) -> None:
        if self.is_square is False:
            raise NotImplementedError(f"{what} is not defined for a non-square operator "
                                      f"({self.shape})")

    def determinant(self, name: str = "det") -> Any:
        self._check_square("Determinant")
        return self._determinant()

    def _determinant(self) -> Any:
        return matrix_ops.det(self.to_dense())

    def log_abs_determinant(self, name: str = "log_abs_det") -> Any:
        self._check_square("Determinant")
        return self._log_abs_determinant()

    def _log_abs_determinant(self) -> Any:
        return matrix_ops.slogdet(self.to_dense())[1]

    def diag_part(self, name: str = "diag_part") -> Any:
        return self._diag_part()

    def _diag_part(self) -> Any:
        return matrix_ops.diag_part(self.to_dense())

    def trace(self, name: str = "trace") -> Any:
        return reduce_ops.reduce_sum(self.diag_part(), axis=-1)

    def add_to_tensor(self, x: Any, name: str = "add_to_tensor") -> Any:
        return self.to_dense() + _tensor(x, self.dtype)

    def adjoint(self, name: str = "adjoint") -> LinearOperator:
        """A^H as an operator (A itself when self-adjoint)."""
        if self.is_self_adjoint:
            return self
        return self._adjoint()

    def _adjoint(self) -> LinearOperator:
        from tapeflow.ops.linear_operator_structured import LinearOperatorAdjoint

        return LinearOperatorAdjoint(self)

    H = property(lambda self: self.adjoint())

    def inverse(self, name: str = "inverse") -> LinearOperator:
        """A^-1 as an operator."""
        if self.is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular "
                             "matrix.")
        if self.is_square is False:
            raise ValueError("Cannot take the Inverse: This operator represents a non square "
                             "matrix.")
        return self._inverse()

    def _inverse(self) -> LinearOperator:
        from tapeflow.ops.linear_operator_structured import LinearOperatorInversion

        return LinearOperatorInversion(self)

    def cholesky(self, name: str = "cholesky") -> LinearOperator:
        """The lower-triangular L with A = L L^H (A self-adjoint positive definite)."""
        if not (self.is_self_adjoint and self.is_positive_definite):
            raise ValueError("Cholesky decomposition only exists for self-adjoint positive "
                             "definite operators (set the is_self_adjoint and "
                             "is_positive_definite hints)")
        return self._cholesky()

    def _cholesky(self) -> LinearOperator:
        return LinearOperatorLowerTriangular(matrix_ops.cholesky(self.to_dense()),
                                             is_non_singular=True)

    def eigvals(self, name: str = "eigvals") -> Any:
        """Eigenvalues (self-adjoint operators only, as TF)."""
        if not self.is_self_adjoint:
            raise NotImplementedError("Only self-adjoint matrices are supported.")
        return self._eigvals()

    def _eigvals(self) -> Any:
        return matrix_ops.eigvalsh(self.to_dense())

    def cond(self, name: str = "cond") -> Any:
        """The condition number: largest over smallest singular value."""
        s = matrix_ops.svd(self.to_dense(), compute_uv=False)
        return reduce_ops.reduce_max(s, -1) / reduce_ops.reduce_min(s, -1)

    def assert_non_singular(self, name: str = "assert_non_singular") -> None:
        """Raises InvalidArgumentError (eagerly) when the determinant is zero."""
        from tapeflow.ops import debug_ops

        return debug_ops.assert_greater(
            math_ops.abs(self.determinant()), array_ops.zeros([], self._real_dtype()),
            message="Singular operator: the determinant is zero.")

    def assert_positive_definite(self, name: str = "assert_positive_definite") -> None:
        """Raises (eagerly) unless the Cholesky factorization succeeds."""
        matrix_ops.cholesky(self.to_dense())

    def assert_self_adjoint(self, name: str = "assert_self_adjoint") -> None:
        from tapeflow.ops import debug_ops

        dense = self.to_dense()
        return debug_ops.assert_equal(dense, _adj(dense),
                                      message="Matrix was not equal to its adjoint.")

    def _real_dtype(self) -> Any:
        return {_dtypes.complex64: _dtypes.float32,
                _dtypes.complex128: _dtypes.float64}.get(self.dtype, self.dtype)

    def __repr__(self) -> str:
        return (f'<tf.linalg.{type(self).__name__} "{self.name}" batch_shape={self.batch_shape} '
                f"shape={self.shape} dtype={self.dtype.name}>")


@export("linalg.LinearOperatorFullMatrix")
class LinearOperatorFullMatrix(LinearOperator):
    """A dense [batch..., M, N] matrix as an operator."""

    def __init__(self, matrix: Any, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str = "LinearOperatorFullMatrix"):
        self._matrix = _tensor(matrix)
        if self._matrix.shape.rank is not None and self._matrix.shape.rank < 2:
            raise ValueError(f"matrix must have rank >= 2, got shape {self._matrix.shape}")
        super().__init__(self._matrix.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name, {"matrix": matrix})

    def _shape(self) -> tuple:
        return _dims(self._matrix.shape)

    def _to_dense(self) -> Any:
        return self._matrix


@export("linalg.LinearOperatorDiag")
class LinearOperatorDiag(LinearOperator):
    """diag(d): multiplies row i by d[i]."""

    def __init__(self, diag: Any, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = True, name: str = "LinearOperatorDiag"):
        self._diag = _tensor(diag)
        if self._diag.shape.rank is not None and self._diag.shape.rank < 1:
            raise ValueError(f"diag must have rank >= 1, got shape {self._diag.shape}")
        if not self._diag.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError("A real diagonal operator is always self adjoint.")
            is_self_adjoint = True
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        super().__init__(self._diag.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, {"diag": diag})

    diag = property(lambda self: self._diag)

    def _shape(self) -> tuple:
        d = _dims(self._diag.shape)
        return d + d[-1:]

    def _to_dense(self) -> Any:
        return matrix_ops.diag(self._diag)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        d = _conj(self._diag) if adjoint else self._diag
        return array_ops.expand_dims(d, -1) * (_adj(x) if adjoint_arg else x)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        d = _conj(self._diag) if adjoint else self._diag
        return rhs / array_ops.expand_dims(d, -1)

    def _determinant(self) -> Any:
        return reduce_ops.reduce_prod(self._diag, axis=-1)

    def _log_abs_determinant(self) -> Any:
        return reduce_ops.reduce_sum(math_ops.log(math_ops.abs(self._diag)), axis=-1)

    def _diag_part(self) -> Any:
        return self._diag

    def _adjoint(self) -> LinearOperator:
        return LinearOperatorDiag(_conj(self._diag), is_non_singular=self.is_non_singular,
                                  is_positive_definite=self.is_positive_definite)

    def _inverse(self) -> LinearOperator:
        return LinearOperatorDiag(1.0 / self._diag, is_non_singular=self.is_non_singular,
                                  is_self_adjoint=self.is_self_adjoint,
                                  is_positive_definite=self.is_positive_definite)

    def _cholesky(self) -> LinearOperator:
        return LinearOperatorDiag(math_ops.sqrt(self._diag), is_non_singular=True,
                                  is_self_adjoint=True, is_positive_definite=True)

    def _eigvals(self) -> Any:
        return self._diag

    def add_to_tensor(self, x: Any, name: str = "add_to_tensor") -> Any:
        x = _tensor(x, self.dtype)
        return matrix_ops.set_diag(x, matrix_ops.diag_part(x) + self._diag)


def _batch_dims(batch_shape: Any) -> tuple:
    return () if batch_shape is None else tuple(int(d) for d in np.asarray(
        batch_shape.numpy() if hasattr(batch_shape, "numpy") else batch_shape).reshape(-1))


class _ScaledIdentityBase(LinearOperator):
    """m * I: multiplier m per batch member (1 for the identity)."""

    def __init__(self, num_rows: Any, multiplier: Any, batch: tuple, dtype: Any, hints: tuple,
                 name: str, parameters: dict):
        self._num_rows = int(num_rows.numpy() if hasattr(num_rows, "numpy") else num_rows)
        if self._num_rows < 0:
            raise ValueError(f"num_rows must be non-negative, got {self._num_rows}")
        self._multiplier = multiplier
        self._batch = batch
        super().__init__(dtype, *hints, True, name, parameters)

    def _scale(self, adjoint: bool) -> Any:
        m = _conj(self._multiplier) if adjoint else self._multiplier
        return array_ops.expand_dims(array_ops.expand_dims(m, -1), -1)

    def _shape(self) -> tuple:
        return self._batch + (self._num_rows, self._num_rows)

    def _ones_batch(self) -> Any:
        return array_ops.ones(list(self._batch), self.dtype)

    def _to_dense(self) -> Any:
        from tapeflow.ops.creation_ops import eye

        dense = eye(self._num_rows, dtype=self.dtype) * self._scale(False)
        return dense * array_ops.ones(list(self._shape()), self.dtype)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        return x * self._scale(adjoint) * array_ops.ones(list(self._batch) + [1, 1], self.dtype)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return rhs / self._scale(adjoint) * array_ops.ones(list(self._batch) + [1, 1], self.dtype)

    def _determinant(self) -> Any:
        return math_ops.pow(self._multiplier, float(self._num_rows)) * self._ones_batch()

    def _log_abs_determinant(self) -> Any:
        log_abs = math_ops.log(math_ops.abs(self._multiplier)) * float(self._num_rows)
        return log_abs * array_ops.ones(list(self._batch), self._real_dtype())

    def _diag_part(self) -> Any:
        return array_ops.expand_dims(self._multiplier, -1) * array_ops.ones(
            list(self._batch) + [self._num_rows], self.dtype)

    def _eigvals(self) -> Any:
        return self._diag_part()


@export("linalg.LinearOperatorIdentity")
class LinearOperatorIdentity(_ScaledIdentityBase):
    """The [batch..., N, N] identity."""

    def __init__(self, num_rows: Any, batch_shape: Any = None, dtype: Any = None,
                 is_non_singular: bool = True, is_self_adjoint: bool = True,
                 is_positive_definite: bool = True, is_square: bool = True,
                 assert_proper_shapes: bool = False, name: str = "LinearOperatorIdentity"):
        if not (is_non_singular and is_self_adjoint and is_positive_definite and is_square):
            raise ValueError("An identity operator is always non-singular, self-adjoint, "
                             "positive definite and square.")
        dtype = _dtypes.as_dtype(dtype or _dtypes.float32)
        super().__init__(num_rows, _tensor(np.ones((), dtype._np)), _batch_dims(batch_shape),
                         dtype, (True, True, True), name,
                         {"num_rows": num_rows, "batch_shape": batch_shape, "dtype": dtype})

    def _adjoint(self) -> LinearOperator:
        return self

    def _inverse(self) -> LinearOperator:
        return self

    def _cholesky(self) -> LinearOperator:
        return self


@export("linalg.LinearOperatorScaledIdentity")
class LinearOperatorScaledIdentity(_ScaledIdentityBase):
    """multiplier * I, the multiplier's shape being the batch shape."""

    def __init__(self, num_rows: Any, multiplier: Any, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool = True, assert_proper_shapes: bool = False,
                 name: str = "LinearOperatorScaledIdentity"):
        m = _tensor(multiplier)
        if not m.dtype.is_complex:
            is_self_adjoint = True if is_self_adjoint is None else is_self_adjoint
        super().__init__(num_rows, m, _dims(m.shape), m.dtype,
                         (is_non_singular, is_self_adjoint, is_positive_definite), name,
                         {"num_rows": num_rows, "multiplier": multiplier})

    multiplier = property(lambda self: self._multiplier)

    def _adjoint(self) -> LinearOperator:
        return LinearOperatorScaledIdentity(self._num_rows, _conj(self._multiplier))

    def _inverse(self) -> LinearOperator:
        return LinearOperatorScaledIdentity(self._num_rows, 1.0 / self._multiplier,
                                            is_non_singular=self.is_non_singular,
                                            is_self_adjoint=self.is_self_adjoint,
                                            is_positive_definite=self.is_positive_definite)

    def _cholesky(self) -> LinearOperator:
        return LinearOperatorScaledIdentity(self._num_rows, math_ops.sqrt(self._multiplier),
                                            is_non_singular=True, is_self_adjoint=True,
                                            is_positive_definite=True)


@export("linalg.LinearOperatorLowerTriangular")
class LinearOperatorLowerTriangular(LinearOperator):
    """The lower triangle of `tril` (what lies above the diagonal is ignored)."""

    def __init__(self, tril: Any, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str = "LinearOperatorLowerTriangular"):
        if is_square is False:
            raise ValueError("Only square lower triangular operators supported at this time.")
        t = _tensor(tril)
        self._tril = matrix_ops.band_part(t, -1, 0)
        super().__init__(t.dtype, is_non_singular, is_self_adjoint, is_positive_definite, True,
                         name, {"tril": tril})

    def _shape(self) -> tuple:
        return _dims(self._tril.shape)

    def _to_dense(self) -> Any:
        return self._tril

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return matrix_ops.triangular_solve(self._tril, rhs, lower=True, adjoint=adjoint)

    def _determinant(self) -> Any:
        return reduce_ops.reduce_prod(matrix_ops.diag_part(self._tril), axis=-1)

    def _log_abs_determinant(self) -> Any:
        return reduce_ops.reduce_sum(
            math_ops.log(math_ops.abs(matrix_ops.diag_part(self._tril))), axis=-1)

    def _eigvals(self) -> Any:
        return matrix_ops.diag_part(self._tril)


@export("linalg.LinearOperatorZeros")
class LinearOperatorZeros(LinearOperator):
    """The [batch..., M, N] zero matrix."""

    def __init__(self, num_rows: int, num_columns: int | None = None, batch_shape: Any = None,
                 dtype: Any = None, is_non_singular: bool = False, is_self_adjoint: bool = True,
                 is_positive_definite: bool = False, is_square: bool = True,
                 assert_proper_shapes: bool = False, name: str = "LinearOperatorZeros"):
        if is_non_singular or is_positive_definite:
            raise ValueError("A zero operator is always singular and not positive definite.")
        self._rows = int(num_rows)
        self._cols = self._rows if num_columns is None else int(num_columns)
        self._batch = _batch_dims(batch_shape)
        square = self._rows == self._cols
        super().__init__(dtype or _dtypes.float32, False, is_self_adjoint and square, False,
                         square, name, {"num_rows": num_rows, "num_columns": num_columns,
                                        "batch_shape": batch_shape, "dtype": dtype})

    def _shape(self) -> tuple:
        return self._batch + (self._rows, self._cols)

    def _to_dense(self) -> Any:
        return array_ops.zeros(list(self._shape()), self.dtype)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        rows = self._cols if adjoint else self._rows
        out_batch = _broadcast_batch(self._batch, _dims(x.shape)[:-2])
        return array_ops.zeros(list(out_batch) + [rows, x.shape[-1]], self.dtype)

    def _determinant(self) -> Any:
        return array_ops.zeros(list(self._batch), self.dtype)

    def _log_abs_determinant(self) -> Any:
        return math_ops.log(array_ops.zeros(list(self._batch), self.dtype))

    def _diag_part(self) -> Any:
        return array_ops.zeros(list(self._batch) + [min(self._rows, self._cols)], self.dtype)

    def _adjoint(self) -> LinearOperator:
        return LinearOperatorZeros(self._cols, self._rows, self._batch or None, self.dtype)

    def add_to_tensor(self, x: Any, name: str = "add_to_tensor") -> Any:
        return _tensor(x, self.dtype) + self.to_dense()
