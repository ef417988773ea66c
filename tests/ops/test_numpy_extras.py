"""The tf.experimental.numpy functions of ops/numpy_extras.py against NumPy itself (the
behaviour TensorFlow's tnp documents), plus gradients of the differentiable ones."""

import numpy as np
import pytest

import tapeflow as tf

tnp = tf.experimental.numpy
A = np.arange(12.0).reshape(3, 4) - 4.5
B = np.array([[1.0, 0.5, -2.0, 3.0]])
INTS = np.array([[6, 4, 9], [10, 15, 21]])
V = np.array([1.0, 2.0, 4.0])

CASES = [
    ("append", (A, B), {"axis": 0}), ("append", (V, [7.0]), {}),
    ("array_equal", (A, A), {}), ("array_equal", (A, A[:2]), {}),
    ("atleast_1d", (3.0,), {}), ("atleast_2d", (V,), {}), ("atleast_3d", (A,), {}),
    ("average", (A,), {"axis": 1}), ("average", (A,), {"axis": 1, "weights": [1, 2, 3, 4]}),
    ("bitwise_and", (INTS, 7), {}), ("bitwise_or", (INTS, 8), {}), ("bitwise_xor", (INTS, 5), {}),
    ("bitwise_not", (INTS,), {}), ("broadcast_to", (V, (2, 3)), {}),
    ("compress", ([True, False, True], A), {"axis": 0}), ("cross", ([1.0, 2, 3], [4.0, 5, 6]), {}),
    ("diagflat", (V,), {"k": 1}), ("diagonal", (A,), {"offset": 1}),
    ("diagonal", (A,), {"offset": -1}), ("diff", (A,), {"n": 2}), ("diff", (A,), {"axis": 0}),
    ("fabs", (A,), {}), ("fliplr", (A,), {}), ("flipud", (A,), {}),
    ("gcd", (INTS, 6), {}), ("lcm", (INTS, 4), {}), ("geomspace", (1.0, 1000.0, 4), {}),
    ("logspace", (0.0, 2.0, 5), {}), ("logspace", (0.0, 3.0, 4), {"base": 2.0}),
    ("heaviside", (A, 0.5), {}), ("isposinf", ([np.inf, -np.inf, 1.0],), {}),
    ("isneginf", ([np.inf, -np.inf, 1.0],), {}), ("iscomplex", ([1 + 1j, 2 + 0j],), {}),
    ("isreal", ([1 + 1j, 2 + 0j],), {}), ("kron", ([[1.0, 2], [3, 4]], [[0.0, 1], [1, 0]]), {}),
    ("logaddexp2", (A, 1.5), {}), ("nansum", ([1.0, np.nan, 2.0],), {}),
    ("nanprod", ([3.0, np.nan, 2.0],), {}), ("nanmean", ([[1.0, np.nan], [2.0, 4.0]],),
                                             {"axis": 1}),
    ("pad", (A, 1), {}), ("pad", (A, ((1, 0), (0, 2))), {"mode": "reflect"}),
    ("polyval", ([1.0, -2.0, 3.0], V), {}), ("ptp", (A,), {"axis": 0}),
    ("rot90", (A,), {}), ("rot90", (A,), {"k": 3}), ("signbit", ([-0.0, 0.0, -1.5, 2.0],), {}),
    ("sinc", ([0.0, 0.5, 1.5],), {}), ("take_along_axis", (A, np.argsort(A, axis=1)),
                                          {"axis": 1}),
    ("tril", (A,), {"k": 1}), ("triu", (A,), {"k": -1}), ("tri", (3, 4), {"k": 1}),
    ("vander", (V,), {}), ("vander", (V,), {"N": 4, "increasing": True}),
    ("flatten", (A,), {}), ("nextafter", (V, 5.0), {}),
]


def _flat(x):
    if isinstance(x, (list, tuple)):
        return [np.asarray(v) for v in x]
    return [np.asarray(x)]


@pytest.mark.parametrize("name,args,kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_numpy(name, args, kwargs):
    want = getattr(np, name)(*args, **kwargs) if name != "flatten" else np.ravel(args[0])
    got = getattr(tnp, name)(*args, **kwargs)
    for g, w in zip(_flat(got), _flat(want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12, err_msg=name)


def test_structured_results_match_numpy():
    for got, want in zip(tnp.split(A, [1, 3], axis=1), np.split(A, [1, 3], axis=1)):
        np.testing.assert_array_equal(np.asarray(got), want)
    assert [g.shape for g in tnp.hsplit(A, 2)] == [(3, 2), (3, 2)]
    assert [g.shape for g in tnp.vsplit(A, 3)] == [(1, 4)] * 3
    for got, want in zip(tnp.meshgrid([1, 2, 3], [4, 5]), np.meshgrid([1, 2, 3], [4, 5])):
        np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(tnp.meshgrid([1, 2], [3, 4, 5], indexing="ij"),
                         np.meshgrid([1, 2], [3, 4, 5], indexing="ij")):
        np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(tnp.nonzero(A > 0), np.nonzero(A > 0)):
        np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(tnp.ix_([0, 1], [2, 3]), np.ix_([0, 1], [2, 3])):
        np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(tnp.divmod(INTS, 4), np.divmod(INTS, 4)):
        np.testing.assert_array_equal(np.asarray(got), want)
    for got, want in zip(tnp.broadcast_arrays(V, [[1.0], [2.0]]),
                         np.broadcast_arrays(V, [[1.0], [2.0]])):
        np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(tnp.dstack([V, V])), np.dstack([V, V]))
    np.testing.assert_array_equal(np.asarray(tnp.select([A < 0, A > 3], [A, A * 2], -1.0)),
                                  np.select([A < 0, A > 3], [A, A * 2], -1.0))
    assert tnp.isscalar(3.0) and not tnp.isscalar(V) and tnp.iscomplexobj([1j])


def test_gradients_of_composites():
    x = tf.constant(A)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tnp.kron(x[:2, :2], [[1.0, 2.0]]) ** 2) + tf.reduce_sum(
            tnp.diff(x, n=2) ** 2) + tf.reduce_sum(tnp.rot90(x) * tf.transpose(tnp.tril(x))[::-1])
    eps, numeric = 1e-6, np.zeros_like(A)

    def f(a):
        return (np.sum(np.kron(a[:2, :2], [[1.0, 2.0]]) ** 2) + np.sum(np.diff(a, n=2) ** 2)
                + np.sum(np.rot90(a) * np.tril(a).T[::-1]))

    for idx in np.ndindex(*A.shape):
        step = np.zeros_like(A)
        step[idx] = eps
        numeric[idx] = (f(A + step) - f(A - step)) / (2 * eps)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), numeric, rtol=1e-6, atol=1e-6)
