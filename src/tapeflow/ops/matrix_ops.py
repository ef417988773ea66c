"""``tf.linalg`` beyond matmul: decompositions, solves, determinants, diagonals, norms.

Every op works on batches (leading dims) and, where TensorFlow differentiates it, has its
gradient written in tapeflow ops next to it: inverse, determinant, log-determinant, solve,
triangular solve, Cholesky, symmetric eigendecomposition, SVD (reduced), diagonals and bands.
QR and the general eigendecomposition have TensorFlow's gradients (QR: reduced, or square).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, math_ops, reduce_ops
from tapeflow.ops import complex_ops as _complex_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.linalg_ops import matmul


def _t(x: Any) -> Any:
    """The last two dims swapped (``tf.linalg.matrix_transpose``)."""
    rank = x.shape.rank
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return array_ops.transpose(x, perm)


def _same(x):
    return x


# --- diagonals and bands ----------------------------------------------------------------------


@op("MatrixDiagPartV3", shape=lambda x: (None if x[0] is None else tuple(x[0][:-2]) + (
    None if None in x[0][-2:] else min(x[0][-2:]),), x[1]))
def _diag_part(x):
    return np.diagonal(x, axis1=-2, axis2=-1).copy()


@op("MatrixDiagV3", shape=lambda d: (None if d[0] is None else tuple(d[0]) + (d[0][-1],), d[1]))
def _diag(d):
    n = d.shape[-1]
    out = np.zeros(d.shape + (n,), dtype=d.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = d
    return out


@_diag_part.def_grad
def _(g, out, x):
    return apply(_set_diag, array_ops.zeros_like(x), g)


@_diag.def_grad
def _(g, out, d):
    return apply(_diag_part, g)


@op("MatrixSetDiagV3", shape=lambda x, d: x)
def _set_diag(x, d):
    out = x.copy()
    k = min(x.shape[-2:])
    idx = np.arange(k)
    out[..., idx, idx] = d
    return out


@_set_diag.def_grad
def _(g, out, x, d):
    return apply(_set_diag, g, array_ops.zeros_like(d)), apply(_diag_part, g)


@op("MatrixBandPart", shape=lambda x, *, lower, upper: x)
def _band_part(x, *, lower, upper):
    m, n = x.shape[-2:]
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    keep = np.ones((m, n), bool)
    if lower >= 0:
        keep &= (i - j) <= lower
    if upper >= 0:
        keep &= (j - i) <= upper
    return np.where(keep, x, np.zeros((), x.dtype))


@_band_part.def_grad
def _(g, out, x, *, lower, upper):
    return apply(_band_part, g, lower=lower, upper=upper)


@export("linalg.diag_part", "linalg.tensor_diag_part")
def diag_part(input: Any, name: str | None = None, k: int = 0, **kwargs: Any) -> Any:  # noqa: A002
    return apply(_diag_part, _tensor(input))


@export("linalg.diag", "linalg.tensor_diag")
def diag(diagonal: Any, name: str | None = None, k: int = 0, **kwargs: Any) -> Any:
    return apply(_diag, _tensor(diagonal))


@export("linalg.set_diag")
def set_diag(input: Any, diagonal: Any, name: str | None = None, k: int = 0,  # noqa: A002
             **kwargs: Any) -> Any:
    x = _tensor(input)
    return apply(_set_diag, x, _tensor(diagonal, x.dtype))


@export("linalg.band_part")
def band_part(input: Any, num_lower: int, num_upper: int, name: str | None = None) -> Any:  # noqa: A002
    """Keep num_lower sub- and num_upper super-diagonals (-1: all of them)."""
    return apply(_band_part, _tensor(input), lower=int(num_lower), upper=int(num_upper))


@export("linalg.trace")
def trace(x: Any, name: str | None = None) -> Any:
    return reduce_ops.reduce_sum(diag_part(x), axis=-1)


@export("linalg.matrix_transpose")
def matrix_transpose(a: Any, name: str | None = None, conjugate: bool = False) -> Any:
    x = _tensor(a)
    if conjugate and x.dtype.is_complex:
        x = apply(_complex_ops._conj, x)
    return _t(x)


@export("linalg.adjoint")
def adjoint(matrix: Any, name: str | None = None) -> Any:
    """The conjugate transpose of the last two dims."""
    return matrix_transpose(matrix, conjugate=True)


@export("linalg.matvec")
def matvec(a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False,
           name: str | None = None) -> Any:
    out = matmul(a, array_ops.expand_dims(_tensor(b), -1), transpose_a=transpose_a or adjoint_a)
    return array_ops.squeeze(out, -1)


# --- inverse, determinants, solves --------------------------------------------------------------


@op("MatrixInverse", shape=lambda x: x)
def _inv(x):
    return np.linalg.inv(x).astype(x.dtype, copy=False)


@_inv.def_grad
def _(g, out, x):
    return -matmul(matmul(out, g, transpose_a=True), out, transpose_b=True)


@op("MatrixDeterminant", shape=lambda x: (None if x[0] is None else tuple(x[0][:-2]), x[1]))
def _det(x):
    return np.asarray(np.linalg.det(x), dtype=x.dtype)


@_det.def_grad
def _(g, out, x):
    scale = array_ops.expand_dims(array_ops.expand_dims(g * out, -1), -1)
    return scale * _t(apply(_inv, x))


@op("LogMatrixDeterminant", multi_output=True, shape=lambda x: [
    (None if x[0] is None else tuple(x[0][:-2]), x[1])] * 2)
def _slogdet(x):
    sign, logabs = np.linalg.slogdet(x)
    return np.asarray(sign, x.dtype), np.asarray(logabs, x.dtype)


@_slogdet.def_grad
def _(g, out, x):
    g_log = array_ops.expand_dims(array_ops.expand_dims(g[1], -1), -1)
    return g_log * _t(apply(_inv, x))


@op("MatrixSolve", shape=lambda a, b, *, adjoint: b)
def _solve(a, b, *, adjoint):
    return np.linalg.solve(np.conj(np.swapaxes(a, -1, -2)) if adjoint else a, b).astype(
        b.dtype, copy=False)


@_solve.def_grad
def _(g, out, a, b, *, adjoint):
    gb = apply(_solve, a, g, adjoint=not adjoint)
    ga = -matmul(out, gb, adjoint_b=True) if adjoint else -matmul(gb, out, adjoint_b=True)
    return ga, gb


@op("MatrixTriangularSolve", shape=lambda a, b, *, lower, adjoint: b)
def _tri_solve(a, b, *, lower, adjoint):
    m = np.tril(a) if lower else np.triu(a)
    if adjoint:
        m = np.conj(np.swapaxes(m, -1, -2))
    return np.linalg.solve(m, b).astype(b.dtype, copy=False)


@_tri_solve.def_grad
def _(g, out, a, b, *, lower, adjoint):
    gb = apply(_tri_solve, a, g, lower=lower, adjoint=not adjoint)
    ga = -matmul(out, gb, adjoint_b=True) if adjoint else -matmul(gb, out, adjoint_b=True)
    keep = (-1, 0) if lower else (0, -1)
    return apply(_band_part, ga, lower=keep[0], upper=keep[1]), gb


@export("linalg.inv")
def inv(input: Any, adjoint: bool = False, name: str | None = None) -> Any:  # noqa: A002
    x = _tensor(input)
    return apply(_inv, _t(x) if adjoint else x)


@export("linalg.det")
def det(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return apply(_det, _tensor(input))


@export("linalg.slogdet")
def slogdet(input: Any, name: str | None = None) -> tuple:  # noqa: A002
    """(sign, log |det|)."""
    return apply(_slogdet, _tensor(input))


@export("linalg.logdet")
def logdet(matrix: Any, name: str | None = None) -> Any:
    """log det of a Hermitian positive definite matrix (through its Cholesky factor)."""
    chol = cholesky(matrix)
    return 2.0 * reduce_ops.reduce_sum(math_ops.log(diag_part(chol)), axis=-1)


@export("linalg.solve")
def solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Any:
    a = _tensor(matrix)
    return apply(_solve, a, _tensor(rhs, a.dtype), adjoint=bool(adjoint))


@export("linalg.triangular_solve")
def triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                     name: str | None = None) -> Any:
    a = _tensor(matrix)
    return apply(_tri_solve, a, _tensor(rhs, a.dtype), lower=bool(lower), adjoint=bool(adjoint))


# --- decompositions -----------------------------------------------------------------------------


@op("Cholesky", shape=lambda x: x)
def _cholesky(x):
    return np.linalg.cholesky(x).astype(x.dtype, copy=False)


@_cholesky.def_grad
def _(g, out, x):
    eye = array_ops.zeros_like(out) + _eye_like(out)
    l_inv = apply(_tri_solve, out, eye, lower=True, adjoint=False)
    middle = matmul(out, g, transpose_a=True)
    middle = apply(_set_diag, middle, 0.5 * apply(_diag_part, middle))
    middle = apply(_band_part, middle, lower=-1, upper=0)
    grad = matmul(matmul(l_inv, middle, transpose_a=True), l_inv)
    return 0.5 * (grad + _t(grad))


def _eye_like(x: Any) -> Any:
    return apply(_diag, array_ops.ones_like(apply(_diag_part, x)))


@export("linalg.cholesky")
def cholesky(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return apply(_cholesky, _tensor(input))


@export("linalg.cholesky_solve")
def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Any:
    y = triangular_solve(chol, rhs, lower=True)
    return triangular_solve(chol, y, lower=True, adjoint=True)


@op("SelfAdjointEigV2", multi_output=True,
    shape=lambda x: [(None if x[0] is None else tuple(x[0][:-1]), x[1]), x])
def _eigh(x):
    e, v = np.linalg.eigh(x)
    return e.astype(x.dtype, copy=False), v.astype(x.dtype, copy=False)


@_eigh.def_grad
def _(g, out, x):
    ge, gv = g
    e, v = out
    diff = array_ops.expand_dims(e, -2) - array_ops.expand_dims(e, -1)
    f = apply(_set_diag, math_ops.divide_no_nan(array_ops.ones_like(diff), diff),
              array_ops.zeros_like(e))
    inner = apply(_diag, ge) + f * matmul(v, gv, transpose_a=True)
    grad = matmul(v, matmul(inner, v, transpose_b=True))
    grad = apply(_band_part, grad + _t(grad), lower=-1, upper=0)
    return apply(_set_diag, grad, 0.5 * apply(_diag_part, grad))


@export("linalg.eigh")
def eigh(tensor: Any, name: str | None = None) -> tuple:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices (lower triangle read)."""
    return apply(_eigh, _tensor(tensor))


@export("linalg.eigvalsh")
def eigvalsh(tensor: Any, name: str | None = None) -> Any:
    return eigh(tensor)[0]


def _svd_shape(x, *, full_matrices):
    if x[0] is None:
        return [(None, x[1])] * 3
    *batch, m, n = x[0]
    k = None if m is None or n is None else min(m, n)
    um, vn = (m, n) if full_matrices else (k, k)
    return [(tuple(batch) + (k,), x[1]), (tuple(batch) + (m, um), x[1]),
            (tuple(batch) + (n, vn), x[1])]


@op("Svd", multi_output=True, shape=_svd_shape)
def _svd(x, *, full_matrices):
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return (s.astype(x.dtype, copy=False), u.astype(x.dtype, copy=False),
            np.swapaxes(vh, -1, -2).astype(x.dtype, copy=False))


@_svd.def_grad
def _(g, out, x, *, full_matrices):
    """Reduced SVD (Townsend 2016): needs distinct singular values for the U/V terms."""
    if full_matrices:
        raise NotImplementedError("SVD gradient with full_matrices=True (as in TensorFlow "
                                  "for non-square inputs)")
    gs, gu, gv = g
    s, u, v = out
    s2 = s * s
    diff = array_ops.expand_dims(s2, -2) - array_ops.expand_dims(s2, -1)  # s_j^2 - s_i^2
    f = apply(_set_diag, math_ops.divide_no_nan(array_ops.ones_like(diff), diff),
              array_ops.zeros_like(s))
    s_mat = apply(_diag, s)
    utgu = matmul(u, gu, transpose_a=True)
    vtgv = matmul(v, gv, transpose_a=True)
    j = f * (utgu - _t(utgu))
    k = f * (vtgv - _t(vtgv))
    inner = matmul(j, s_mat) + apply(_diag, gs) + matmul(s_mat, k)
    grad = matmul(matmul(u, inner), v, transpose_b=True)
    s_inv = apply(_diag, math_ops.divide_no_nan(array_ops.ones_like(s), s))
    eye_m = _eye_like(matmul(u, u, transpose_b=True))
    eye_n = _eye_like(matmul(v, v, transpose_b=True))
    grad += matmul(matmul(matmul(eye_m - matmul(u, u, transpose_b=True), gu), s_inv), v,
                   transpose_b=True)
    grad += matmul(matmul(u, s_inv), matmul(gv, eye_n - matmul(v, v, transpose_b=True),
                                            transpose_a=True))
    return grad


@export("linalg.svd")
def svd(tensor: Any, full_matrices: bool = False, compute_uv: bool = True,
        name: str | None = None) -> Any:
    """Singular values (descending), and U, V with tensor = U diag(s) V^T (V, not V^T)."""
    s, u, v = apply(_svd, _tensor(tensor), full_matrices=bool(full_matrices))
    return (s, u, v) if compute_uv else s


def _qr_shape(x, *, full_matrices):
    if x[0] is None:
        return [(None, x[1]), (None, x[1])]
    *batch, m, n = x[0]
    k = m if full_matrices else (None if m is None or n is None else min(m, n))
    return [(tuple(batch) + (m, k), x[1]), (tuple(batch) + (k, n), x[1])]


@op("Qr", multi_output=True, shape=_qr_shape)
def _qr(x, *, full_matrices):
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)


def _qr_grad_tall(q: Any, r: Any, dq: Any, dr: Any) -> Any:
    """TensorFlow's QR gradient for m >= n (reduced) or square matrices."""
    qdq = matmul(q, dq, adjoint_a=True)
    qdq_ = qdq - adjoint(qdq)
    rdr = matmul(r, dr, adjoint_b=True)
    rdr_ = rdr - adjoint(rdr)
    tril = apply(_band_part, qdq_ + rdr_, lower=-1, upper=0)

    def times_r_inv_h(x):  # x @ inverse(r)^H, by a triangular solve
        return adjoint(triangular_solve(r, adjoint(x), lower=False))

    grad = matmul(q, dr + times_r_inv_h(tril)) + times_r_inv_h(dq - matmul(q, qdq))
    if q.dtype.is_complex:  # the imaginary part of diag(r)'s phase (TF's correction)
        m = rdr - adjoint(qdq)
        eye = _eye_like(m)
        correction = eye * apply(_complex_ops._complex, array_ops.zeros_like(
            apply(_complex_ops._real, m)), apply(_complex_ops._imag, m))
        grad = grad + matmul(q, times_r_inv_h(correction))
    return grad


@_qr.def_grad
def _(g, out, x, *, full_matrices):
    dq, dr = g
    q, r = out
    m, n = x.shape.as_list()[-2:]
    if m is None or n is None:
        raise NotImplementedError("QR gradient needs the matrix's static shape")
    if m >= n:
        if full_matrices and m > n:
            raise NotImplementedError("QrGrad not implemented when nrows > ncols and "
                                      "full_matrices is true (as in TensorFlow)")
        return _qr_grad_tall(q, r, dq, dr)
    y = x[..., :, m:]
    u, dv = r[..., :, :m], dr[..., :, m:]
    dx = _qr_grad_tall(q, u, dq + matmul(y, dv, adjoint_b=True), dr[..., :, :m])
    return array_ops.concat([dx, matmul(q, dv)], axis=-1)


@export("linalg.qr")
def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> tuple:  # noqa: A002
    return apply(_qr, _tensor(input), full_matrices=bool(full_matrices))


def _eig_shape(x):
    kind = _dtypes.complex128 if x[1] in (_dtypes.float64, _dtypes.complex128) else \
        _dtypes.complex64
    return [(None if x[0] is None else tuple(x[0][:-1]), kind), (x[0], kind)]


@op("Eig", multi_output=True, shape=_eig_shape)
def _eig(x):
    e, v = np.linalg.eig(x)
    kind = np.complex128 if x.dtype in (np.float64, np.complex128) else np.complex64
    return e.astype(kind), v.astype(kind)


@_eig.def_grad
def _(g, out, x):
    """TensorFlow's rule: A's gradient = V^-H (diag(ge) + F * (V^H gv - V^H V Re(diag(V^H gv))))
    V^H, F = conj(1 / (e_j - e_i)) off the diagonal; the real part for a real input."""
    ge, gv = g
    e, v = out
    vt = adjoint(v)
    diff = array_ops.expand_dims(e, -2) - array_ops.expand_dims(e, -1)
    f = apply(_complex_ops._conj, apply(_set_diag, math_ops.reciprocal(diff),
                                        array_ops.zeros_like(e)))
    vgv = matmul(vt, gv)
    real_diag = apply(_diag, math_ops.cast(apply(_complex_ops._real, apply(_diag_part, vgv)),
                                          vgv.dtype))
    mid = apply(_diag, ge) + f * (vgv - matmul(matmul(vt, v), real_diag))
    grad = apply(_solve, vt, matmul(mid, vt), adjoint=False)
    return grad if x.dtype.is_complex else apply(_complex_ops._real, grad)


@export("linalg.eig", "eig")
def eig(tensor: Any, name: str | None = None) -> tuple:
    return apply(_eig, _tensor(tensor))


@export("linalg.eigvals", "eigvals")
def eigvals(tensor: Any, name: str | None = None) -> Any:
    return eig(tensor)[0]


@export("linalg.pinv")
def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: str | None = None) -> Any:
    """Moore-Penrose pseudo-inverse through the SVD (singular values below rcond*max cut)."""
    x = _tensor(a)
    s, u, v = svd(x)
    if rcond is None:
        rcond = 10.0 * max(x.shape.as_list()[-2:]) * float(np.finfo(x.dtype._np).eps)
    cut = rcond * reduce_ops.reduce_max(s, axis=-1, keepdims=True)
    keep = math_ops.greater(s, cut)
    s_inv = math_ops.where(keep, math_ops.divide_no_nan(array_ops.ones_like(s), s),
                           array_ops.zeros_like(s))
    return matmul(v * array_ops.expand_dims(s_inv, -2), u, transpose_b=True)


@export("linalg.lstsq")
def lstsq(matrix: Any, rhs: Any, l2_regularizer: float = 0.0, fast: bool = True,
          name: str | None = None) -> Any:
    """Least-squares solution of matrix @ x = rhs (normal equations, optional ridge)."""
    a = _tensor(matrix)
    gram = matmul(a, a, transpose_a=True)
    if l2_regularizer:
        gram = gram + l2_regularizer * _eye_like(gram)
    return solve(gram, matmul(a, _tensor(rhs, a.dtype), transpose_a=True))


# --- norms and products ---------------------------------------------------------------------


@export("norm", "linalg.norm")
def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002
         keepdims: bool | None = None, name: str | None = None) -> Any:
    """Vector norms (euclidean/2, 1, inf, any p) and matrix norms ('fro', 1, inf, 2, 'nuclear'
    is not a TF ord) over `axis` (all elements when None)."""
    x = _tensor(tensor)
    keep = bool(keepdims)
    matrix_axes = isinstance(axis, (list, tuple)) and len(axis) == 2
    if ord in ("euclidean", "fro") or (ord == 2 and not matrix_axes):
        return math_ops.sqrt(reduce_ops.reduce_sum(x * x, axis=axis, keepdims=keep))
    if matrix_axes:
        rows, cols = (a % x.shape.rank for a in axis)
        if ord in (np.inf, "inf"):
            rows, cols = cols, rows
        if ord in (1, np.inf, "inf"):  # largest column (row for inf) absolute sum
            sums = reduce_ops.reduce_sum(math_ops.abs(x), axis=rows, keepdims=True)
            out = reduce_ops.reduce_max(sums, axis=cols, keepdims=True)
            return out if keep else array_ops.squeeze(out, sorted((rows, cols)))
        if ord == 2:
            return reduce_ops.reduce_max(svd(x, compute_uv=False), axis=-1)
        raise ValueError(f"tf.norm: unsupported matrix ord {ord!r}")
    if ord == 1:
        return reduce_ops.reduce_sum(math_ops.abs(x), axis=axis, keepdims=keep)
    if ord in (np.inf, "inf"):
        return reduce_ops.reduce_max(math_ops.abs(x), axis=axis, keepdims=keep)
    if isinstance(ord, (int, float)) and ord > 0:
        p = float(ord)
        return math_ops.pow(reduce_ops.reduce_sum(math_ops.pow(math_ops.abs(x), p), axis=axis,
                                                  keepdims=keep), 1.0 / p)
    raise ValueError(f"tf.norm: ord must be a positive number, 'euclidean', 'fro', np.inf; got "
                     f"{ord!r}")


@export("linalg.global_norm")
def global_norm(t_list: Any, name: str | None = None) -> Any:
    """sqrt(sum of the squared elements of all tensors) (None entries ignored)."""
    total = [reduce_ops.reduce_sum(math_ops.square(_tensor(t))) for t in t_list if t is not None]
    return math_ops.sqrt(math_ops.add_n(total) if len(total) > 1 else total[0])


@export("clip_by_global_norm")
def clip_by_global_norm(t_list: Any, clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple:
    """Scale all tensors by clip_norm / max(global_norm, clip_norm); (clipped, global_norm)."""
    norm_value = global_norm(t_list) if use_norm is None else _tensor(use_norm)
    clip = math_ops.cast(_tensor(clip_norm), norm_value.dtype)
    scale = clip / math_ops.maximum(norm_value, clip)
    clipped = [None if t is None else _tensor(t) * math_ops.cast(scale, _tensor(t).dtype)
               for t in t_list]
    return clipped, norm_value


@export("clip_by_norm")
def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """t * clip_norm / max(l2norm(t, axes), clip_norm)."""
    x = _tensor(t)
    l2 = math_ops.sqrt(reduce_ops.reduce_sum(x * x, axis=axes, keepdims=True))
    clip = math_ops.cast(_tensor(clip_norm), x.dtype)
    return x * clip / math_ops.maximum(l2, clip)


@export("tensordot", "linalg.tensordot")
def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Any:
    """Sum over the given axes of a and b (an int n: a's last n with b's first n)."""
    from tapeflow.ops.linalg_ops import einsum

    x, y = _tensor(a), _tensor(b)
    ra, rb = x.shape.rank, y.shape.rank
    if isinstance(axes, int):
        ax_a, ax_b = list(range(ra - axes, ra)), list(range(axes))
    else:
        ax_a, ax_b = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                      [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    ax_a = [i % ra for i in ax_a]
    ax_b = [i % rb for i in ax_b]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(ra)]
    sb = [next(letters) for _ in range(rb)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + [c for j, c in enumerate(sb)
                                                            if j not in ax_b]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", x, y)


@export("linalg.cross", "cross")
def cross(a: Any, b: Any, name: str | None = None) -> Any:
    x, y = _tensor(a), _tensor(b)
    x0, x1, x2 = x[..., 0], x[..., 1], x[..., 2]
    y0, y1, y2 = y[..., 0], y[..., 1], y[..., 2]
    return array_ops.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)


@export("linalg.normalize")
def normalize(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002
              name: str | None = None) -> tuple:
    n = norm(tensor, ord=ord, axis=axis, keepdims=True)
    return _tensor(tensor) / n, n


@export("nn.embedding_lookup")
def embedding_lookup(params: Any, ids: Any, max_norm: Any = None, name: str | None = None) -> Any:
    """Rows of `params` at `ids` (any shape; ragged ids give a ragged result)."""
    from tapeflow.ops import gather_ops

    table = params[0] if isinstance(params, (list, tuple)) and len(params) == 1 else params
    if isinstance(table, (list, tuple)):
        table = array_ops.concat([_tensor(p) for p in table], 0)
    if hasattr(ids, "with_flat_values"):  # ragged ids
        return ids.with_flat_values(embedding_lookup(table, ids.flat_values, max_norm))
    if getattr(table, "_is_sharded_variable", False):  # each id from the shard holding it
        rows = table._embedding_lookup(ids)
    else:
        rows = gather_ops.gather(table, ids)
    if max_norm is not None:
        rows = clip_by_norm(rows, max_norm, axes=[-1])
    return rows
