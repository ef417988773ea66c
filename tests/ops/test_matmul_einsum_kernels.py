"""The planned einsum (``kernels/einsum``), the split matrix product (``kernels/matmul``) and
the compiled softmax: NumPy's values, the fallbacks, and the same bits whether the slices ran
on idle cores or one after another."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import threads
from tapeflow.kernels import einsum as E
from tapeflow.kernels import layer_norm as K
from tapeflow.kernels import matmul as M
from tapeflow.kernels import parallel

rng = np.random.default_rng(5)

PLANNED = [  # every product Keras's MultiHeadAttention and its gradients run, and others
    ("abc,cde->abde", [(3, 5, 8), (8, 2, 4)]),  # projection
    ("abde,cde->abc", [(3, 5, 2, 4), (8, 2, 4)]),  # its input gradient
    ("abc,abde->cde", [(3, 5, 8), (3, 5, 2, 4)]),  # its kernel gradient
    ("aecd,abcd->acbe", [(3, 6, 2, 4), (3, 5, 2, 4)]),  # scores
    ("acbe,aecd->abcd", [(3, 2, 5, 6), (3, 6, 2, 4)]),  # combine: written through a view
    ("abcd,cde->abe", [(3, 5, 2, 4), (2, 4, 7)]),  # output projection
    ("ij,jk->ik", [(4, 3), (3, 5)]),
    ("ji,jk->ki", [(3, 4), (3, 5)]),  # transposed output
    ("bij,bjk->bik", [(2, 4, 3), (2, 3, 5)]),
    ("i,j->ij", [(3,), (4,)]),  # outer product: no contracted letter
    ("ab,ab->", [(3, 4), (3, 4)]),  # full contraction
    ("abc,abc->b", [(2, 3, 4), (2, 3, 4)]),
    ("abcd,bd->acb", [(2, 3, 4, 5), (3, 5)]),  # several free letters, output reordered
]
UNPLANNED = [
    ("ii,ij->j", [(3, 3), (3, 4)]),  # a diagonal
    ("ij,k->i", [(2, 3), (4,)]),  # summed in one operand alone
    ("bij,bjk->bik", [(1, 2, 3), (4, 3, 4)]),  # size-1 broadcast
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("equation, shapes", PLANNED + UNPLANNED)
def test_einsum_kernel_matches_numpy(equation, shapes, dtype):
    xs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if dtype == np.complex128:
        xs = [x + 1j * rng.standard_normal(x.shape) for x in xs]
    got = E.einsum(equation, *xs)
    want = np.einsum(equation, *xs)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    planned = len(xs) == 2 and E._plan(equation, *(x.shape for x in xs)) is not None
    assert planned == ((equation, shapes) in PLANNED)


def test_einsum_kernel_is_used_on_strided_operands():
    """A transposed or sliced operand (a view) is read in place, not rejected."""
    a = rng.standard_normal((8, 6)).astype(np.float32).T[:, ::2]
    b = rng.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(E.einsum("ij,jk->ik", a, b), a @ b, rtol=1e-6)


def _force_split(monkeypatch, idle: bool) -> None:
    monkeypatch.setattr(threads, "_intra_op", 3)
    monkeypatch.setattr(M, "SPLIT_FLOPS", 0)
    monkeypatch.setattr(parallel, "idle_core", lambda: idle)


@pytest.mark.parametrize("sa, sb", [((7, 5), (5, 9)), ((4, 6, 5), (5, 3)), ((4, 6, 5), (4, 5, 3)),
                                    ((6, 5), (4, 5, 3)), ((1, 5), (5, 8))])
def test_split_matmul_is_the_same_bits_idle_or_busy(monkeypatch, sa, sb):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    _force_split(monkeypatch, idle=True)
    calls = []
    real = parallel.split
    monkeypatch.setattr(parallel, "split", lambda *args, **kw: calls.append(kw) or
                        real(*args, **kw))
    idle = M.matmul(a, b)
    _force_split(monkeypatch, idle=False)
    busy = M.matmul(a, b)
    np.testing.assert_array_equal(idle, busy)
    np.testing.assert_allclose(idle, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    assert calls and all(kw["slices"] == 3 for kw in calls)


def test_split_einsum_through_a_view_equals_unsplit(monkeypatch):
    p, v = rng.standard_normal((3, 2, 5, 6)), rng.standard_normal((3, 6, 2, 4))
    whole = E.einsum("acbe,aecd->abcd", p, v)
    _force_split(monkeypatch, idle=True)
    np.testing.assert_allclose(E.einsum("acbe,aecd->abcd", p, v), whole, rtol=1e-12)


def test_large_matmul_graph_equals_eager_and_numpy():
    """A product over SPLIT_FLOPS goes through the kernel in both modes, to the same bits."""
    a = tf.constant(rng.standard_normal((900, 64)).astype(np.float32))
    b = tf.constant(rng.standard_normal((64, 256)).astype(np.float32))
    assert 2 * 900 * 64 * 256 >= M.SPLIT_FLOPS
    fn = tf.function(lambda a, b: tf.matmul(a, b, transpose_b=False))
    np.testing.assert_array_equal(fn(a, b).numpy(), tf.matmul(a, b).numpy())
    # Row slices may sum in another order than one BLAS call (OpenBLAS picks its kernel by CPU),
    # so compare with the exact float64 product at float32's scale, not elementwise rtol.
    exact = a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)
    tol = 1e-5 * np.abs(exact).max()
    np.testing.assert_allclose(tf.matmul(a, b).numpy(), exact, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_softmax_matches_numpy_with_infinities(dtype):
    x = rng.standard_normal((5, 3, 7)).astype(dtype) * 30
    x[0, 0, :3] = -np.inf  # masked scores
    x[1, 1, :] = -1e9
    e = np.exp(x - x.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    got = K.softmax(x)
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14,
                               atol=1e-7)
    assert (got[0, 0, :3] == 0).all()
    assert K.softmax(np.zeros((0, 4), dtype)).shape == (0, 4)


def test_softmax_op_eager_equals_graph_and_torch():
    torch = pytest.importorskip("torch")
    x = tf.constant(rng.standard_normal((4, 3, 16)).astype(np.float32))
    graph = tf.function(tf.nn.softmax)(x).numpy()
    np.testing.assert_array_equal(graph, tf.nn.softmax(x).numpy())
    np.testing.assert_allclose(graph, torch.softmax(torch.tensor(x.numpy()), -1).numpy(),
                               rtol=1e-6, atol=1e-7)
