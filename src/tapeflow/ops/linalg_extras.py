"""More of ``tf.linalg``: matrix functions (expm, sqrtm, logm), LU factorization and its
solvers, matrix_rank, tridiagonal solve/matmul.

expm and sqrtm are primitives with SciPy kernels and TensorFlow's gradients written in tapeflow
ops (expm's through the block-triangular exponential, sqrtm's through a Sylvester solve); the
LU helpers and tridiagonal functions are compositions of existing differentiable ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, gather_ops, math_ops, matrix_ops, reduce_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.linalg_ops import matmul


def _batched(fn: Any, x: np.ndarray) -> np.ndarray:
    flat = x.reshape((-1,) + x.shape[-2:])
    out = np.stack([fn(m) for m in flat]) if len(flat) else np.zeros_like(flat)
    return out.reshape(x.shape[:-2] + out.shape[-2:]).astype(x.dtype, copy=False)


@op("MatrixExponential", shape=lambda x: x)
def _expm(x):
    from scipy.linalg import expm

    return _batched(expm, x)


@_expm.def_grad
def _(g, out, x):
    """The adjoint Frechet derivative: the upper-right block of expm([[X^H, G], [0, X^H]])."""
    n = x.shape[-1]
    xh = matrix_ops.adjoint(x)
    top = array_ops.concat([xh, g], -1)
    bottom = array_ops.concat([array_ops.zeros_like(xh), xh], -1)
    block = apply(_expm, array_ops.concat([top, bottom], -2))
    return block[..., :n, n:]


@export("linalg.expm")
def expm(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The matrix exponential of the innermost [N, N] matrices."""
    return apply(_expm, _tensor(input))


@op("SylvesterSolve", shape=lambda a, b, q: q)
def _sylvester(a, b, q):
    """X with a X + X b = q, per batch."""
    from scipy.linalg import solve_sylvester

    flat = [solve_sylvester(*m) for m in zip(a.reshape((-1,) + a.shape[-2:]),
                                              b.reshape((-1,) + b.shape[-2:]),
                                              q.reshape((-1,) + q.shape[-2:]))]
    return np.stack(flat).reshape(q.shape).astype(q.dtype, copy=False)


@op("MatrixSquareRoot", shape=lambda x: x)
def _sqrtm(x):
    from scipy.linalg import sqrtm as sp_sqrtm

    def root(m):
        r = sp_sqrtm(m)
        return r.real if not np.iscomplexobj(m) else r
    return _batched(root, x)


@_sqrtm.def_grad
def _(g, out, x):
    """S S = A gives dS S + S dS = dA, so A's gradient X solves S^H X + X S^H = G."""
    sh = matrix_ops.adjoint(out)
    return apply(_sylvester, sh, sh, g)


@export("linalg.sqrtm", "matrix_square_root")
def sqrtm(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The principal square root of the innermost matrices."""
    return apply(_sqrtm, _tensor(input))


@op("MatrixLogarithm", shape=lambda x: x)
def _logm(x):
    from scipy.linalg import logm as sp_logm

    return _batched(sp_logm, x)


@export("linalg.logm")
def logm(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The principal matrix logarithm (complex inputs, as in TensorFlow; no gradient)."""
    x = _tensor(input)
    if not x.dtype.is_complex:
        raise TypeError(f"tf.linalg.logm: input must be complex64 or complex128, got "
                        f"{x.dtype.name}")
    return apply(_logm, x)


def _lu_shape(x, *, index_dtype):
    return [x, (None if x[0] is None else tuple(x[0][:-1]), index_dtype)]


@op("Lu", multi_output=True, shape=_lu_shape)
def _lu(x, *, index_dtype):
    from scipy.linalg import lu_factor

    flat = x.reshape((-1,) + x.shape[-2:])
    packed, perms = [], []
    for m in flat:
        lu, piv = lu_factor(m)
        perm = np.arange(m.shape[0])
        for i, p in enumerate(piv):
            perm[[i, p]] = perm[[p, i]]
        packed.append(lu)
        perms.append(perm)
    lu = np.stack(packed).reshape(x.shape).astype(x.dtype, copy=False)
    return lu, np.stack(perms).reshape(x.shape[:-1]).astype(index_dtype._np)


@export("linalg.lu")
def lu(input: Any, output_idx_type: Any = _dtypes.int32, name: str | None = None) -> tuple:  # noqa: A002
    """(lower_upper, perm): x[perm] = L @ U with unit-diagonal L and U packed in one matrix."""
    return tuple(apply(_lu, _tensor(input), index_dtype=_dtypes.as_dtype(output_idx_type)))


def _unpack(lower_upper: Any) -> tuple:
    eye = matrix_ops._eye_like(lower_upper)
    lower = matrix_ops.band_part(lower_upper, -1, 0) - matrix_ops.band_part(lower_upper, 0, 0) \
        + eye
    return lower, matrix_ops.band_part(lower_upper, 0, -1)


@export("linalg.lu_reconstruct")
def lu_reconstruct(lower_upper: Any, perm: Any, validate_args: bool = False,
                   name: str | None = None) -> Any:
    """The matrix whose LU factorization is (lower_upper, perm)."""
    lu_t = _tensor(lower_upper)
    lower, upper = _unpack(lu_t)
    rows = matmul(lower, upper)  # = x[perm]: put each row back where it came from
    inverse = array_ops.argsort(_tensor(perm), axis=-1)
    return gather_ops.gather(rows, inverse, batch_dims=lu_t.shape.rank - 2)


@export("linalg.lu_solve")
def lu_solve(lower_upper: Any, perm: Any, rhs: Any, validate_args: bool = False,
             name: str | None = None) -> Any:
    """Solve x @ X = rhs from x's LU factorization."""
    lu_t = _tensor(lower_upper)
    lower, upper = _unpack(lu_t)
    b = _tensor(rhs, lu_t.dtype)
    permuted = gather_ops.gather(b, _tensor(perm), batch_dims=lu_t.shape.rank - 2)
    y = matrix_ops.triangular_solve(lower, permuted, lower=True)
    return matrix_ops.triangular_solve(upper, y, lower=False)


@export("linalg.lu_matrix_inverse")
def lu_matrix_inverse(lower_upper: Any, perm: Any, validate_args: bool = False,
                      name: str | None = None) -> Any:
    """The inverse of the matrix with LU factorization (lower_upper, perm)."""
    lu_t = _tensor(lower_upper)
    return lu_solve(lu_t, perm, matrix_ops._eye_like(lu_t))


@export("linalg.matrix_rank")
def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False,
                name: str | None = None) -> Any:
    """The number of singular values above tol (default: eps * max(M, N) * largest)."""
    x = _tensor(a)
    s = matrix_ops.svd(x, compute_uv=False)
    if tol is None:
        m, n = x.shape.as_list()[-2:]
        eps = float(np.finfo(x.dtype._np).eps)
        tol = reduce_ops.reduce_max(s, axis=-1, keepdims=True) * (eps * max(m, n))
    return reduce_ops.reduce_sum(math_ops.cast(math_ops.greater(s, tol), _dtypes.int32),
                                 axis=-1)


def _tridiagonal_matrix(diagonals: Any, diagonals_format: str) -> Any:
    """The dense matrix of compact [..., 3, M] (super, main, sub), a (super, main, sub)
    sequence, or a full matrix."""
    if diagonals_format == "matrix":
        return _tensor(diagonals)
    if diagonals_format == "sequence":
        sup, main, sub = (_tensor(d) for d in diagonals)
    elif diagonals_format == "compact":
        d = _tensor(diagonals)
        sup, main, sub = d[..., 0, :], d[..., 1, :], d[..., 2, :]
    else:
        raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")
    rank = main.shape.rank
    batch = [[0, 0]] * (rank - 1)
    upper = array_ops.pad(matrix_ops.diag(sup[..., :-1]), batch + [[0, 1], [1, 0]])
    lower = array_ops.pad(matrix_ops.diag(sub[..., 1:]), batch + [[1, 0], [0, 1]])
    return matrix_ops.diag(main) + upper + lower


@export("linalg.tridiagonal_solve")
def tridiagonal_solve(diagonals: Any, rhs: Any, diagonals_format: str = "compact",
                      transpose_rhs: bool = False, conjugate_rhs: bool = False,
                      name: str | None = None, partial_pivoting: bool = True,
                      perturb_singular: bool = False) -> Any:
    """Solve a tridiagonal system (rhs [..., M] or [..., M, K])."""
    m = _tridiagonal_matrix(diagonals, diagonals_format)
    b = _tensor(rhs, m.dtype)
    vector = b.shape.rank == m.shape.rank - 1
    if transpose_rhs:
        b = matrix_ops.matrix_transpose(b, conjugate=conjugate_rhs)
    if vector:
        b = array_ops.expand_dims(b, -1)
    x = matrix_ops.solve(m, b)
    return x[..., 0] if vector else x


@export("linalg.tridiagonal_matmul")
def tridiagonal_matmul(diagonals: Any, rhs: Any, diagonals_format: str = "compact",
                       name: str | None = None) -> Any:
    """A tridiagonal matrix times rhs [..., M, N]."""
    m = _tridiagonal_matrix(diagonals, diagonals_format)
    return matmul(m, _tensor(rhs, m.dtype))


def _band_matrix(bands: Any, lower: bool) -> Any:
    """The dense triangular matrix of TF's [..., K, M] band storage (LEFT_RIGHT alignment:
    lower: row k is the k-th subdiagonal, right-aligned; upper: row K-1-k is the k-th
    superdiagonal, left-aligned)."""
    k_rows, m = int(bands.shape[-2]), int(bands.shape[-1])
    out = None
    for k in range(k_rows):
        row = bands[..., k, :] if lower else bands[..., k_rows - 1 - k, :]
        # lower: A[i, i - k] = row[i]; upper: A[i, i + k] = row[i]
        place = np.eye(m, k=-k if lower else k).astype(bands.dtype._np)
        term = array_ops.expand_dims(row, -1) * _tensor(place)
        out = term if out is None else out + term
    return out


@export("linalg.banded_triangular_solve")
def banded_triangular_solve(bands: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                            name: str | None = None) -> Any:
    """Solve A X = rhs for a banded triangular A given by its K bands ([..., K, M])."""
    b = _tensor(bands)
    return matrix_ops.triangular_solve(_band_matrix(b, bool(lower)), _tensor(rhs, b.dtype),
                                       lower=bool(lower), adjoint=bool(adjoint))


@export("linalg.eigh_tridiagonal")
def eigh_tridiagonal(alpha: Any, beta: Any, eigvals_only: bool = True, select: str = "a",
                     select_range: Any = None, tol: Any = None, name: str | None = None) -> Any:
    """Eigenvalues (ascending; and eigenvectors unless eigvals_only) of the Hermitian
    tridiagonal matrix with diagonal alpha and off-diagonal beta. select: 'a' all, 'i' the
    index range [lo, hi] of select_range, 'v' the eigenvalues in the half-open (lo, hi]."""
    from tapeflow.ops import complex_ops

    a = _tensor(alpha)
    b = _tensor(beta)
    if a.shape.rank != 1 or b.shape.rank != 1:
        raise ValueError("eigh_tridiagonal: alpha and beta must be vectors")
    n = int(a.shape[0])
    if int(b.shape[0]) != n - 1:
        raise ValueError(f"eigh_tridiagonal: beta must have {n - 1} elements, got {b.shape[0]}")
    dtype = b.dtype if b.dtype.is_complex else a.dtype
    diag = math_ops.cast(a, dtype)
    upper = np.eye(n, k=1).astype(dtype._np)
    lower = np.eye(n, k=-1).astype(dtype._np)
    pad_hi = array_ops.pad(b, [[0, 1]])
    pad_lo = array_ops.pad(complex_ops.conj(b) if b.dtype.is_complex else b, [[1, 0]])
    dense = (matrix_ops.diag(diag) + array_ops.expand_dims(pad_hi, -1) * _tensor(upper)
             + array_ops.expand_dims(pad_lo, -1) * _tensor(lower))
    values, vectors = matrix_ops.eigh(dense)
    if select == "i":
        lo, hi = (int(v) for v in np.asarray(select_range).reshape(-1))
        values, vectors = values[lo:hi + 1], vectors[:, lo:hi + 1]
    elif select == "v":
        lo, hi = (float(v) for v in np.asarray(select_range).reshape(-1))
        keep = np.flatnonzero((values.numpy() > lo) & (values.numpy() <= hi))
        values = gather_ops.gather(values, keep.astype(np.int32))
        vectors = gather_ops.gather(vectors, keep.astype(np.int32), axis=1)
    elif select != "a":
        raise ValueError(f"select must be 'a', 'i' or 'v', got {select!r}")
    return values if eigvals_only else (values, vectors)
