"""tf.linalg decompositions, solves, determinants, diagonals, norms: forward vs NumPy,
float64 finite-difference gradients, graph vs eager."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import OpCase, check_grads, op_table_tests


def _spd(rng):
    a = rng.standard_normal((3, 3))
    return [a @ a.T + 3 * np.eye(3)]


def _square(rng):
    return [rng.standard_normal((3, 3)) + 2 * np.eye(3)]


def _sym_eigvecs(a):
    """Eigenvectors with a fixed sign (largest entry positive) so both sides compare."""
    return a * np.sign(a[np.argmax(np.abs(a), axis=0), range(a.shape[1])])


def _fix_sign(v):
    idx = tf.argmax(tf.abs(v), axis=0)
    signs = tf.sign(tf.gather_nd(v, tf.stack([idx, tf.range(3, dtype=idx.dtype)], 1)))
    return v * signs


CASES = [
    OpCase("inv", tf.linalg.inv, np.linalg.inv, _square),
    OpCase("det", tf.linalg.det, np.linalg.det, _square),
    OpCase("slogdet", lambda a: tf.linalg.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1],
           _square),
    # cholesky/logdet read a symmetric matrix and TF's gradient is the symmetric one
    OpCase("logdet", lambda a: tf.linalg.logdet((a + tf.transpose(a)) / 2),
           lambda a: np.linalg.slogdet(a)[1], _spd),
    OpCase("solve", tf.linalg.solve, np.linalg.solve,
           lambda rng: _square(rng) + [rng.standard_normal((3, 2))]),
    OpCase("solve_adjoint", lambda a, b: tf.linalg.solve(a, b, adjoint=True),
           lambda a, b: np.linalg.solve(a.T, b),
           lambda rng: _square(rng) + [rng.standard_normal((3, 2))]),
    OpCase("triangular_solve", tf.linalg.triangular_solve,
           lambda a, b: np.linalg.solve(np.tril(a), b),
           lambda rng: _square(rng) + [rng.standard_normal((3, 2))]),
    OpCase("cholesky", lambda a: tf.linalg.cholesky((a + tf.transpose(a)) / 2),
           np.linalg.cholesky, _spd),
    OpCase("eigvalsh", tf.linalg.eigvalsh, np.linalg.eigvalsh, _spd),
    OpCase("eigh_vectors", lambda a: _fix_sign(tf.linalg.eigh(a)[1]),
           lambda a: _sym_eigvecs(np.linalg.eigh(a)[1]), _spd),
    OpCase("svd_values", lambda a: tf.linalg.svd(a, compute_uv=False),
           lambda a: np.linalg.svd(a, compute_uv=False),
           lambda rng: [rng.standard_normal((4, 3))]),
    OpCase("svd_reconstruct", lambda a: (lambda s, u, v: tf.matmul(u * s[None, :], v,
                                                                    transpose_b=True))(
        *tf.linalg.svd(a)), lambda a: a, lambda rng: [rng.standard_normal((4, 3))]),
    OpCase("diag_part", tf.linalg.diag_part, np.diagonal,
           lambda rng: [rng.standard_normal((3, 4))]),
    OpCase("diag", tf.linalg.diag, np.diag, lambda rng: [rng.standard_normal(3)]),
    OpCase("band_part", lambda a: tf.linalg.band_part(a, 1, 0),
           lambda a: np.tril(np.triu(a, -1)), lambda rng: [rng.standard_normal((4, 4))]),
    OpCase("trace", tf.linalg.trace, np.trace, _square),
    OpCase("norm", tf.norm, np.linalg.norm, lambda rng: [rng.standard_normal((3, 4))]),
    OpCase("norm_1_axis", lambda a: tf.norm(a, ord=1, axis=1),
           lambda a: np.abs(a).sum(1), lambda rng: [rng.standard_normal((3, 4))]),
    OpCase("matrix_norm_1", lambda a: tf.norm(a, ord=1, axis=[-2, -1]),
           lambda a: np.linalg.norm(a, 1), lambda rng: [rng.standard_normal((3, 4))]),
    OpCase("tensordot", lambda a, b: tf.tensordot(a, b, axes=[[1], [0]]),
           lambda a, b: np.tensordot(a, b, axes=[[1], [0]]),
           lambda rng: [rng.standard_normal((2, 3)), rng.standard_normal((3, 4))]),
    OpCase("cross", tf.linalg.cross, np.cross,
           lambda rng: [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))]),
    OpCase("pinv", tf.linalg.pinv, np.linalg.pinv, lambda rng: [rng.standard_normal((4, 3))],
           grad=False),
]

test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = op_table_tests(CASES)


def test_svd_gradient_of_u_and_v_terms():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3))

    def f(x):
        s, u, v = tf.linalg.svd(x)
        return tf.reduce_sum(u[:, :2] ** 3) + tf.reduce_sum(v[1:] ** 3) + tf.reduce_sum(s)

    check_grads(f, [a])


def test_batched_and_errors():
    x = np.stack([np.eye(2) * 2, np.eye(2) * 4])
    np.testing.assert_allclose(tf.linalg.det(x).numpy(), [4, 16])
    np.testing.assert_allclose(tf.linalg.inv(x).numpy(), np.linalg.inv(x))
    with pytest.raises(tf.errors.InvalidArgumentError, match="MatrixInverse"):
        tf.linalg.inv(np.zeros((2, 2)))


def test_clip_by_global_norm_and_embedding_lookup():
    a, b = tf.constant([3.0, 4.0]), tf.constant([0.0, 12.0])
    clipped, n = tf.clip_by_global_norm([a, b], 6.5)
    assert float(n) == 13.0
    np.testing.assert_allclose(clipped[0].numpy(), [1.5, 2.0])
    np.testing.assert_allclose(tf.clip_by_norm(a, 1.0).numpy(), [0.6, 0.8])
    table = tf.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(tf.nn.embedding_lookup(table, [[2, 0]]).numpy(),
                                  [[[2, 2], [0, 0]]])
    assert tf.nn.embedding_lookup(table, tf.ragged.constant([[1], [2, 0]])).to_list() == \
        [[[1, 1]], [[2, 2], [0, 0]]]
