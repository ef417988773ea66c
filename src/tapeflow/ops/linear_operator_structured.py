"""Structured ``tf.linalg.LinearOperator``s built from other operators or a few parameters:
adjoint, inversion, composition, block-diagonal, block lower-triangular, Kronecker, low-rank
update, Toeplitz, circulant (1-D, 2-D, 3-D), permutation, Householder, tridiagonal.

Each defines its dense matrix and the shortcuts its structure gives (a composition's
determinant is the product of its factors', a Kronecker product's is prod det_i ** (n / n_i),
a permutation or Householder reflection solves by multiplying with its adjoint, a low-rank
update's determinant and solve follow the matrix determinant lemma and Woodbury's identity)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.ops import (
    array_ops,
    complex_ops,
    gather_ops,
    linalg_extras,
    math_ops,
    matrix_ops,
    reduce_ops,
    signal_ops,
)
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.linalg_ops import matmul as _matmul
from tapeflow.ops.linear_operator import (
    LinearOperator,
    _adj,
    _broadcast_batch,
    _conj,
    _dims,
)


def _all(ops: list, hint: str) -> bool | None:
    values = [getattr(o, hint) for o in ops]
    return True if all(v is True for v in values) else None


@export("linalg.LinearOperatorAdjoint")
class LinearOperatorAdjoint(LinearOperator):
    """operator^H without forming it."""

    def __init__(self, operator: LinearOperator, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str | None = None):
        self.operator = operator
        super().__init__(operator.dtype,
                         operator.is_non_singular if is_non_singular is None else is_non_singular,
                         operator.is_self_adjoint if is_self_adjoint is None else is_self_adjoint,
                         operator.is_positive_definite if is_positive_definite is None
                         else is_positive_definite, is_square,
                         name or operator.name + "_adjoint", {"operator": operator})

    def _shape(self) -> tuple:
        s = self.operator._shape()
        return s[:-2] + (s[-1], s[-2])

    def _to_dense(self) -> Any:
        return _adj(self.operator.to_dense())

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self.operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return self.operator.solve(rhs, adjoint=not adjoint)

    def _determinant(self) -> Any:
        return _conj(self.operator.determinant())

    def _log_abs_determinant(self) -> Any:
        return self.operator.log_abs_determinant()

    def _diag_part(self) -> Any:
        return _conj(self.operator.diag_part())

    def _adjoint(self) -> LinearOperator:
        return self.operator


@export("linalg.LinearOperatorInversion")
class LinearOperatorInversion(LinearOperator):
    """operator^-1 without forming it: matmul solves, solve multiplies."""

    def __init__(self, operator: LinearOperator, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str | None = None):
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError("operator and the supplied hints must be non-singular")
        self.operator = operator
        super().__init__(operator.dtype, True,
                         operator.is_self_adjoint if is_self_adjoint is None else is_self_adjoint,
                         operator.is_positive_definite if is_positive_definite is None
                         else is_positive_definite, True,
                         name or operator.name + "_inv", {"operator": operator})

    def _shape(self) -> tuple:
        return self.operator._shape()

    def _to_dense(self) -> Any:
        from tapeflow.ops.creation_ops import eye

        n = self._shape()[-1]
        batch = list(self._shape()[:-2])
        return self.operator.solve(eye(n, dtype=self.dtype) * array_ops.ones(
            batch + [1, 1], self.dtype))

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self.operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return self.operator.matmul(rhs, adjoint=adjoint)

    def _determinant(self) -> Any:
        return 1.0 / self.operator.determinant()

    def _log_abs_determinant(self) -> Any:
        return -self.operator.log_abs_determinant()

    def _inverse(self) -> LinearOperator:
        return self.operator


@export("linalg.LinearOperatorComposition")
class LinearOperatorComposition(LinearOperator):
    """operators[0] @ operators[1] @ ... (applied right to left)."""

    def __init__(self, operators: list, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str | None = None):
        operators = list(operators)
        if not operators:
            raise ValueError("Expected a non-empty list of operators.")
        dtypes = {o.dtype for o in operators}
        if len(dtypes) > 1:
            raise TypeError(f"Expected all operators to have the same dtype, got "
                            f"{sorted(d.name for d in dtypes)}")
        for a, b in zip(operators, operators[1:]):
            if a.domain_dimension is not None and b.range_dimension is not None and \
                    a.domain_dimension != b.range_dimension:
                raise ValueError(f"Operators are incompatible: {a.shape} @ {b.shape}")
        self.operators = operators
        if is_non_singular is None and _all(operators, "is_non_singular") and \
                all(o.is_square for o in operators):
            is_non_singular = True
        super().__init__(operators[0].dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square,
                         name or "_o_".join(o.name for o in operators),
                         {"operators": operators})

    def _shape(self) -> tuple:
        batch = _broadcast_batch(*(o._shape()[:-2] for o in self.operators))
        return batch + (self.operators[0]._shape()[-2], self.operators[-1]._shape()[-1])

    def _to_dense(self) -> Any:
        out = self.operators[-1].to_dense()
        for o in reversed(self.operators[:-1]):
            out = o.matmul(out)
        return out

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        order = self.operators if adjoint else list(reversed(self.operators))
        out = order[0].matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for o in order[1:]:
            out = o.matmul(out, adjoint=adjoint)
        return out

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        order = list(reversed(self.operators)) if adjoint else self.operators
        out = rhs
        for o in order:
            out = o.solve(out, adjoint=adjoint)
        return out

    def _determinant(self) -> Any:
        out = self.operators[0].determinant()
        for o in self.operators[1:]:
            out = out * o.determinant()
        return out

    def _log_abs_determinant(self) -> Any:
        out = self.operators[0].log_abs_determinant()
        for o in self.operators[1:]:
            out = out + o.log_abs_determinant()
        return out


def _split_rows(x: Any, sizes: list) -> list:
    return array_ops.split(x, sizes, axis=-2)


@export("linalg.LinearOperatorBlockDiag")
class LinearOperatorBlockDiag(LinearOperator):
    """Square operators on the diagonal of a block matrix, zeros elsewhere."""

    def __init__(self, operators: list, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool = True, name: str | None = None):
        operators = list(operators)
        if not operators:
            raise ValueError("Expected a non-empty list of operators.")
        if len({o.dtype for o in operators}) > 1:
            raise TypeError("Expected all operators to have the same dtype.")
        if any(o.is_square is False for o in operators):
            raise ValueError("Block diagonal operators must be square (each block too).")
        self.operators = operators
        super().__init__(operators[0].dtype,
                         is_non_singular if is_non_singular is not None
                         else _all(operators, "is_non_singular"),
                         is_self_adjoint if is_self_adjoint is not None
                         else _all(operators, "is_self_adjoint"),
                         is_positive_definite if is_positive_definite is not None
                         else _all(operators, "is_positive_definite"), True,
                         name or "_ds_".join(o.name for o in operators),
                         {"operators": operators})

    def _sizes(self, adjoint: bool = False) -> list:
        return [o._shape()[-1 if adjoint else -2] for o in self.operators]

    def _shape(self) -> tuple:
        batch = _broadcast_batch(*(o._shape()[:-2] for o in self.operators))
        n = sum(self._sizes())
        return batch + (n, n)

    def _to_dense(self) -> Any:
        total = sum(self._sizes())
        rows, start = [], 0
        batch = list(self._shape()[:-2])
        for o in self.operators:
            block = o.to_dense() * array_ops.ones(batch + [1, 1], self.dtype)
            n = o._shape()[-1]
            pad = [[0, 0]] * len(batch) + [[0, 0], [start, total - start - n]]
            rows.append(array_ops.pad(block, pad))
            start += n
        return array_ops.concat(rows, axis=-2)

    def _blockwise(self, x: Any, fn: Any, adjoint_arg: bool = False) -> Any:
        x = _adj(x) if adjoint_arg else x
        parts = _split_rows(x, self._sizes())
        return array_ops.concat([fn(o, p) for o, p in zip(self.operators, parts)], axis=-2)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._blockwise(x, lambda o, p: o.matmul(p, adjoint=adjoint), adjoint_arg)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return self._blockwise(rhs, lambda o, p: o.solve(p, adjoint=adjoint))

    def _determinant(self) -> Any:
        out = self.operators[0].determinant()
        for o in self.operators[1:]:
            out = out * o.determinant()
        return out

    def _log_abs_determinant(self) -> Any:
        out = self.operators[0].log_abs_determinant()
        for o in self.operators[1:]:
            out = out + o.log_abs_determinant()
        return out

    def _diag_part(self) -> Any:
        batch = list(self._shape()[:-2])
        return array_ops.concat([o.diag_part() * array_ops.ones(batch + [1], self.dtype)
                                 for o in self.operators], axis=-1)

    def _adjoint(self) -> LinearOperator:
        return LinearOperatorBlockDiag([o.adjoint() for o in self.operators])

    def _inverse(self) -> LinearOperator:
        return LinearOperatorBlockDiag([o.inverse() for o in self.operators])


@export("linalg.LinearOperatorBlockLowerTriangular")
class LinearOperatorBlockLowerTriangular(LinearOperator):
    """A block lower-triangular matrix: row i holds operators[i][0..i], the last one square
    on the diagonal."""

    def __init__(self, operators: list, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str = "LinearOperatorBlockLowerTriangular"):
        rows = [list(r) for r in operators]
        if not rows or any(len(r) != i + 1 for i, r in enumerate(rows)):
            raise ValueError("operators must be a list of rows, row i holding i + 1 operators")
        self.operators = rows
        diag = [r[-1] for r in rows]
        super().__init__(rows[0][0].dtype,
                         is_non_singular if is_non_singular is not None
                         else _all(diag, "is_non_singular"),
                         is_self_adjoint, is_positive_definite, True, name,
                         {"operators": operators})

    def _sizes(self) -> list:
        return [r[-1]._shape()[-1] for r in self.operators]

    def _shape(self) -> tuple:
        batch = _broadcast_batch(*(o._shape()[:-2] for r in self.operators for o in r))
        n = sum(self._sizes())
        return batch + (n, n)

    def _to_dense(self) -> Any:
        sizes, batch = self._sizes(), list(self._shape()[:-2])
        rows = []
        for i, r in enumerate(self.operators):
            blocks = [o.to_dense() * array_ops.ones(batch + [1, 1], self.dtype) for o in r]
            blocks += [array_ops.zeros(batch + [sizes[i], n], self.dtype) for n in sizes[i + 1:]]
            rows.append(array_ops.concat(blocks, axis=-1))
        return array_ops.concat(rows, axis=-2)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        if adjoint:
            return super()._solve(rhs, adjoint)
        parts = _split_rows(rhs, self._sizes())
        solved = []
        for i, r in enumerate(self.operators):  # forward substitution, block by block
            acc = parts[i]
            for j, o in enumerate(r[:-1]):
                acc = acc - o.matmul(solved[j])
            solved.append(r[-1].solve(acc))
        return array_ops.concat(solved, axis=-2)

    def _determinant(self) -> Any:
        out = self.operators[0][0].determinant()
        for r in self.operators[1:]:
            out = out * r[-1].determinant()
        return out

    def _log_abs_determinant(self) -> Any:
        out = self.operators[0][0].log_abs_determinant()
        for r in self.operators[1:]:
            out = out + r[-1].log_abs_determinant()
        return out


def _kron(a: Any, b: Any) -> Any:
    """Kronecker product of the last two dims (batch dims broadcast)."""
    m, n = a.shape[-2], a.shape[-1]
    p, q = b.shape[-2], b.shape[-1]
    outer = array_ops.expand_dims(array_ops.expand_dims(a, -1), -3) * \
        array_ops.expand_dims(array_ops.expand_dims(b, -2), -4)  # [..., m, p, n, q]
    batch = array_ops.shape(outer)[:-4]
    return array_ops.reshape(outer, array_ops.concat([batch, [m * p, n * q]], 0))


@export("linalg.LinearOperatorKronecker")
class LinearOperatorKronecker(LinearOperator):
    """operators[0] (x) operators[1] (x) ...: the Kronecker product."""

    def __init__(self, operators: list, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str | None = None):
        operators = list(operators)
        if not operators:
            raise ValueError("Expected a non-empty list of operators.")
        if len({o.dtype for o in operators}) > 1:
            raise TypeError("Expected all operators to have the same dtype.")
        self.operators = operators
        super().__init__(operators[0].dtype,
                         is_non_singular if is_non_singular is not None
                         else _all(operators, "is_non_singular"),
                         is_self_adjoint if is_self_adjoint is not None
                         else _all(operators, "is_self_adjoint"),
                         is_positive_definite if is_positive_definite is not None
                         else _all(operators, "is_positive_definite"), is_square,
                         name or "_x_".join(o.name for o in operators),
                         {"operators": operators})

    def _shape(self) -> tuple:
        batch = _broadcast_batch(*(o._shape()[:-2] for o in self.operators))
        m = n = 1
        for o in self.operators:
            r, c = o._shape()[-2:]
            m = None if m is None or r is None else m * r
            n = None if n is None or c is None else n * c
        return batch + (m, n)

    def _to_dense(self) -> Any:
        out = self.operators[0].to_dense()
        for o in self.operators[1:]:
            out = _kron(out, o.to_dense())
        return out

    def _determinant(self) -> Any:
        n = self._shape()[-1]
        out = None
        for o in self.operators:
            d = math_ops.pow(o.determinant(), float(n // o._shape()[-1]))
            out = d if out is None else out * d
        return out

    def _log_abs_determinant(self) -> Any:
        n = self._shape()[-1]
        out = None
        for o in self.operators:
            d = o.log_abs_determinant() * float(n // o._shape()[-1])
            out = d if out is None else out + d
        return out

    def _diag_part(self) -> Any:
        out = self.operators[0].diag_part()
        for o in self.operators[1:]:
            d = o.diag_part()
            prod = array_ops.expand_dims(out, -1) * array_ops.expand_dims(d, -2)
            out = array_ops.reshape(prod, array_ops.concat([array_ops.shape(prod)[:-2], [-1]], 0))
        return out

    def _adjoint(self) -> LinearOperator:
        return LinearOperatorKronecker([o.adjoint() for o in self.operators])

    def _inverse(self) -> LinearOperator:
        return LinearOperatorKronecker([o.inverse() for o in self.operators])


@export("linalg.LinearOperatorLowRankUpdate")
class LinearOperatorLowRankUpdate(LinearOperator):
    """base + U diag(d) V^H (V = U and d = 1 when omitted): determinant by the matrix
    determinant lemma, solve by Woodbury's identity."""

    def __init__(self, base_operator: LinearOperator, u: Any, diag_update: Any = None,
                 v: Any = None, is_diag_update_positive: bool | None = None,
                 is_non_singular: bool | None = None, is_self_adjoint: bool | None = None,
                 is_positive_definite: bool | None = None, is_square: bool | None = None,
                 name: str = "LinearOperatorLowRankUpdate"):
        self.base_operator = base_operator
        self.u = _tensor(u, base_operator.dtype)
        self.v = self.u if v is None else _tensor(v, base_operator.dtype)
        self.diag_update = None if diag_update is None else _tensor(diag_update,
                                                                     base_operator.dtype)
        if is_self_adjoint is None and v is None and base_operator.is_self_adjoint and (
                not self.u.dtype.is_complex):
            is_self_adjoint = True
        if is_positive_definite is None and v is None and base_operator.is_positive_definite \
                and (diag_update is None or is_diag_update_positive):
            is_positive_definite = True
        super().__init__(base_operator.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name,
                         {"base_operator": base_operator, "u": u, "diag_update": diag_update,
                          "v": v})

    def _shape(self) -> tuple:
        batch = _broadcast_batch(self.base_operator._shape()[:-2], _dims(self.u.shape)[:-2])
        return batch + self.base_operator._shape()[-2:]

    def _scaled_v(self) -> Any:
        if self.diag_update is None:
            return self.v
        return self.v * array_ops.expand_dims(_conj(self.diag_update), -2)

    def _to_dense(self) -> Any:
        return self.base_operator.to_dense() + _matmul(self.u, self._scaled_v(), adjoint_b=True)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        left, right = (self._scaled_v(), self.u) if adjoint else (self.u, self._scaled_v())
        return self.base_operator.matmul(x, adjoint=adjoint) + _matmul(
            left, _matmul(right, x, adjoint_a=True))

    def _capacitance(self) -> Any:
        """D^-1 + V^H base^-1 U (the identity for D when no diag_update is given)."""
        from tapeflow.ops.creation_ops import eye

        k = self.u.shape[-1]
        inner = _matmul(self.v, self.base_operator.solve(self.u), adjoint_a=True)
        if self.diag_update is None:
            return inner + eye(k, dtype=self.dtype)
        return inner + matrix_ops.diag(1.0 / self.diag_update)

    def _determinant(self) -> Any:
        det = self.base_operator.determinant() * matrix_ops.det(self._capacitance())
        if self.diag_update is not None:
            det = det * reduce_ops.reduce_prod(self.diag_update, axis=-1)
        return det

    def _log_abs_determinant(self) -> Any:
        out = self.base_operator.log_abs_determinant() + matrix_ops.slogdet(
            self._capacitance())[1]
        if self.diag_update is not None:
            out = out + reduce_ops.reduce_sum(math_ops.log(math_ops.abs(self.diag_update)), -1)
        return out

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        if adjoint:
            return super()._solve(rhs, adjoint)
        base = self.base_operator
        first = base.solve(rhs)
        correction = _matmul(self.v, first, adjoint_a=True)
        correction = matrix_ops.solve(self._capacitance(), correction)
        return first - base.solve(_matmul(self.u, correction))


def _toeplitz_index(n: int, m: int) -> np.ndarray:
    """Where T[i, j] sits in concat(reverse(row[1:]), col): at i - j + m - 1."""
    return np.arange(n)[:, None] - np.arange(m)[None, :] + m - 1


@export("linalg.LinearOperatorToeplitz")
class LinearOperatorToeplitz(LinearOperator):
    """T[i, j] = col[i - j] below and on the diagonal, row[j - i] above (row[0] is ignored)."""

    def __init__(self, col: Any, row: Any, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str = "LinearOperatorToeplitz"):
        self.col = _tensor(col)
        self.row = _tensor(row, self.col.dtype)
        super().__init__(self.col.dtype, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name, {"col": col, "row": row})

    def _shape(self) -> tuple:
        batch = _broadcast_batch(_dims(self.col.shape)[:-1], _dims(self.row.shape)[:-1])
        return batch + (self.col.shape[-1], self.row.shape[-1])

    def _to_dense(self) -> Any:
        batch = list(self._shape()[:-2])
        col = self.col * array_ops.ones(batch + [1], self.dtype)
        row = self.row * array_ops.ones(batch + [1], self.dtype)
        values = array_ops.concat([array_ops.reverse(row[..., 1:], [-1]), col], axis=-1)
        index = _toeplitz_index(self.col.shape[-1], self.row.shape[-1])
        return gather_ops.gather(values, _tensor(index.astype(np.int32)), axis=-1)


class _CirculantBase(LinearOperator):
    """A (block-)circulant operator from the FFT of its first column ("spectrum") over the last
    `rank` dims: its dense matrix is C[i, j] = c[(i - j) mod n] per dim, c = ifft(spectrum)."""

    _rank = 1

    def __init__(self, spectrum: Any, input_output_dtype: Any, is_non_singular: bool | None,
                 is_self_adjoint: bool | None, is_positive_definite: bool | None,
                 is_square: bool, name: str):
        s = _tensor(spectrum)
        if not s.dtype.is_complex:
            s = complex_ops.complex(s, array_ops.zeros_like(s))
        self.spectrum = s
        self._io_dtype = _dtypes.as_dtype(input_output_dtype)
        super().__init__(self._io_dtype, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name, {"spectrum": spectrum,
                                      "input_output_dtype": input_output_dtype})

    def _block_shape(self) -> tuple:
        return _dims(self.spectrum.shape)[-self._rank:]

    def _shape(self) -> tuple:
        dims = _dims(self.spectrum.shape)
        n = int(np.prod(self._block_shape()))
        return dims[:-self._rank] + (n, n)

    def _first_column(self) -> Any:
        ifft = {1: signal_ops.ifft, 2: signal_ops.ifft2d, 3: signal_ops.ifft3d}[self._rank]
        c = ifft(self.spectrum)
        return array_ops.reshape(c, array_ops.concat([array_ops.shape(c)[:-self._rank], [-1]],
                                                     0))

    def _index(self) -> np.ndarray:
        dims = self._block_shape()
        grids = np.indices(dims).reshape(len(dims), -1)  # multi-index of each flat position
        diff = (grids[:, :, None] - grids[:, None, :]) % np.asarray(dims)[:, None, None]
        return np.ravel_multi_index(tuple(diff), dims)

    def _to_dense(self) -> Any:
        dense = gather_ops.gather(self._first_column(),
                                  _tensor(self._index().astype(np.int32)), axis=-1)
        if self._io_dtype.is_complex:
            return math_ops.cast(dense, self._io_dtype)
        return math_ops.cast(complex_ops.real(dense), self._io_dtype)

    def _determinant(self) -> Any:
        det = reduce_ops.reduce_prod(self.spectrum, axis=list(range(-self._rank, 0)))
        if self._io_dtype.is_complex:
            return math_ops.cast(det, self._io_dtype)
        return math_ops.cast(complex_ops.real(det), self._io_dtype)

    def _log_abs_determinant(self) -> Any:
        # TF returns it in the operator's dtype (complex for a complex operator)
        return math_ops.cast(reduce_ops.reduce_sum(
            math_ops.log(math_ops.abs(self.spectrum)), axis=list(range(-self._rank, 0))),
            self._io_dtype)

    def _adjoint(self) -> LinearOperator:
        # TF builds the adjoint without its input_output_dtype: complex64, whatever this one's
        return type(self)(_conj(self.spectrum))

    def _eigvals(self) -> Any:
        s = array_ops.reshape(self.spectrum, array_ops.concat(
            [array_ops.shape(self.spectrum)[:-self._rank], [-1]], 0))
        return s if self._io_dtype.is_complex else math_ops.cast(complex_ops.real(s),
                                                                 self._io_dtype)


def _circulant(rank: int, tf_name: str) -> type:
    class Circulant(_CirculantBase):
        _rank = rank

        def __init__(self, spectrum: Any, input_output_dtype: Any = _dtypes.complex64,
                     is_non_singular: bool | None = None, is_self_adjoint: bool | None = None,
                     is_positive_definite: bool | None = None, is_square: bool = True,
                     name: str = tf_name):
            super().__init__(spectrum, input_output_dtype, is_non_singular, is_self_adjoint,
                             is_positive_definite, is_square, name)

    Circulant.__name__ = Circulant.__qualname__ = tf_name
    Circulant.__doc__ = f"A circulant operator over {rank} dim(s) of its spectrum."
    return export(f"linalg.{tf_name}")(Circulant)


LinearOperatorCirculant = _circulant(1, "LinearOperatorCirculant")
LinearOperatorCirculant2D = _circulant(2, "LinearOperatorCirculant2D")
LinearOperatorCirculant3D = _circulant(3, "LinearOperatorCirculant3D")


@export("linalg.LinearOperatorPermutation")
class LinearOperatorPermutation(LinearOperator):
    """The permutation matrix P with P @ x = gather(x, perm) along the rows."""

    def __init__(self, perm: Any, dtype: Any = _dtypes.float32,
                 is_non_singular: bool | None = None, is_self_adjoint: bool | None = None,
                 is_positive_definite: bool | None = None, is_square: bool | None = None,
                 name: str = "LinearOperatorPermutation"):
        self.perm = math_ops.cast(_tensor(perm), _dtypes.int64)
        super().__init__(dtype, True, is_self_adjoint, is_positive_definite, True, name,
                         {"perm": perm, "dtype": dtype})

    def _shape(self) -> tuple:
        d = _dims(self.perm.shape)
        return d + d[-1:]

    def _to_dense(self) -> Any:
        from tapeflow.ops.creation_ops import one_hot

        return one_hot(self.perm, self.perm.shape[-1], dtype=self.dtype)

    def _determinant(self) -> Any:
        return math_ops.cast(matrix_ops.det(math_ops.cast(self.to_dense(), _dtypes.float64)),
                             self.dtype)

    def _log_abs_determinant(self) -> Any:
        return array_ops.zeros(list(self._shape()[:-2]), self._real_dtype())

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return self.matmul(rhs, adjoint=not adjoint)


@export("linalg.LinearOperatorHouseholder")
class LinearOperatorHouseholder(LinearOperator):
    """I - 2 v v^H / (v^H v): the reflection through the hyperplane orthogonal to v."""

    def __init__(self, reflection_axis: Any, is_non_singular: bool | None = None,
                 is_self_adjoint: bool | None = None, is_positive_definite: bool | None = None,
                 is_square: bool | None = None, name: str = "LinearOperatorHouseholder"):
        self.reflection_axis = _tensor(reflection_axis)
        if is_positive_definite:
            raise ValueError("A Householder operator is always non-positive definite.")
        super().__init__(self.reflection_axis.dtype, True, True, False, True, name,
                         {"reflection_axis": reflection_axis})

    def _shape(self) -> tuple:
        d = _dims(self.reflection_axis.shape)
        return d + d[-1:]

    def _unit(self) -> Any:
        v = self.reflection_axis
        norm = math_ops.sqrt(reduce_ops.reduce_sum(v * _conj(v), -1, keepdims=True))
        return v / norm

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        u = array_ops.expand_dims(self._unit(), -1)
        return x - 2.0 * _matmul(u, _matmul(u, x, adjoint_a=True))

    def _to_dense(self) -> Any:
        from tapeflow.ops.creation_ops import eye

        n = self.reflection_axis.shape[-1]
        return self._matmul(eye(n, dtype=self.dtype) * array_ops.ones(
            list(self._shape()[:-2]) + [1, 1], self.dtype), False, False)

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        return self._matmul(rhs, False, False)

    def _determinant(self) -> Any:
        return -array_ops.ones(list(self._shape()[:-2]), self.dtype)

    def _log_abs_determinant(self) -> Any:
        return array_ops.zeros(list(self._shape()[:-2]), self._real_dtype())

    def _eigvals(self) -> Any:
        n = self.reflection_axis.shape[-1]
        ones = np.ones(n)
        ones[0] = -1.0
        return _tensor(ones.astype(self.dtype._np)) * array_ops.ones(
            list(self._shape()[:-2]) + [1], self.dtype)


@export("linalg.LinearOperatorTridiag")
class LinearOperatorTridiag(LinearOperator):
    """A tridiagonal matrix from its diagonals: 'compact' [..., 3, n] (superdiagonal with its
    last entry ignored, diagonal, subdiagonal with its first ignored), 'sequence' (the three
    as a list) or 'matrix' (a full matrix whose other entries are ignored)."""

    def __init__(self, diagonals: Any, diagonals_format: str = "compact",
                 is_non_singular: bool | None = None, is_self_adjoint: bool | None = None,
                 is_positive_definite: bool | None = None, is_square: bool | None = None,
                 name: str = "LinearOperatorTridiag"):
        if diagonals_format not in ("compact", "sequence", "matrix"):
            raise ValueError(f"diagonals_format must be 'compact', 'sequence' or 'matrix', got "
                             f"{diagonals_format!r}")
        if diagonals_format == "sequence":
            parts = [_tensor(d) for d in diagonals]
            self.diagonals = array_ops.stack(parts, axis=-2)
        elif diagonals_format == "matrix":
            m = _tensor(diagonals)
            self._matrix = m  # TF's to_dense gives the matrix back as it was given
            sup = array_ops.pad(matrix_ops.diag_part(m[..., :-1, 1:]),
                                [[0, 0]] * (m.shape.rank - 2) + [[0, 1]])
            sub = array_ops.pad(matrix_ops.diag_part(m[..., 1:, :-1]),
                                [[0, 0]] * (m.shape.rank - 2) + [[1, 0]])
            self.diagonals = array_ops.stack([sup, matrix_ops.diag_part(m), sub], axis=-2)
        else:
            self.diagonals = _tensor(diagonals)
        self.diagonals_format = diagonals_format
        super().__init__(self.diagonals.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         {"diagonals": diagonals, "diagonals_format": diagonals_format})

    def _shape(self) -> tuple:
        d = _dims(self.diagonals.shape)
        return d[:-2] + (d[-1], d[-1])

    def _to_dense(self) -> Any:
        return self._matrix if self.diagonals_format == "matrix" else self._banded()

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        # only the three diagonals act, even when a full matrix was given (as in TF)
        return _matmul(self._banded(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _banded(self) -> Any:
        sup, main, sub = (self.diagonals[..., i, :] for i in range(3))
        n = self.diagonals.shape[-1]
        up = np.eye(n, k=1)
        down = np.eye(n, k=-1)
        # row i of the super diagonal takes sup[i]; row i + 1 of the sub diagonal takes sub[i+1]
        return (matrix_ops.diag(main)
                + array_ops.expand_dims(sup, -1) * _tensor(up.astype(self.dtype._np))
                + array_ops.expand_dims(sub, -1) * _tensor(down.astype(self.dtype._np)))

    def _solve(self, rhs: Any, adjoint: bool) -> Any:
        if adjoint:
            return matrix_ops.solve(self._banded(), rhs, adjoint=True)
        return linalg_extras.tridiagonal_solve(self.diagonals, rhs)

    def _diag_part(self) -> Any:
        return self.diagonals[..., 1, :]

