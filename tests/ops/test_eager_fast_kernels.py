"""The eager fast paths of issue 21: the fused Dense op, the compiled ReLU and sparse
cross-entropy kernels and the 2-D product's one BLAS call give the unfused NumPy results
(bit for bit where the arithmetic is the same), gradients check by finite differences, and
eager Dense equals traced Dense (which keeps MatMul -> AddV2 -> Relu)."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.kernels import activations as act_kernels
from tapeflow.kernels import matmul as matmul_kernel
from tapeflow.kernels import xent as xent_kernel
from tapeflow.ops import fused_matmul, nn_ops
from tapeflow.testing import check_grads

rng = np.random.default_rng(0)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("size", [1000, 5000])  # NumPy's path below 2,048 elements, compiled above
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_kernel_same_bits_as_maximum(dtype, size):
    x = rng.standard_normal(size).astype(dtype)
    x[:4] = [-0.0, np.nan, np.inf, -np.inf]
    np.testing.assert_array_equal(_bits(act_kernels.relu(x)), _bits(np.maximum(x, 0)))
    strided = x.reshape(20, -1)[:, ::3]  # not contiguous: NumPy's path
    np.testing.assert_array_equal(act_kernels.relu(strided), np.maximum(strided, 0))
    ints = np.arange(-3, 4, dtype=np.int32)
    assert act_kernels.relu(ints).dtype == np.int32
    np.testing.assert_array_equal(act_kernels.relu(ints), np.maximum(ints, 0))


def test_two_d_product_is_one_blas_call_with_matmuls_bits():
    a = rng.standard_normal((60, 784)).astype(np.float32)
    b = rng.standard_normal((784, 128)).astype(np.float32)
    np.testing.assert_array_equal(_bits(matmul_kernel.matmul(a, b)), _bits(np.matmul(a, b)))
    np.testing.assert_array_equal(_bits(matmul_kernel.matmul(b.T, a.T)),
                                  _bits(np.matmul(b.T, a.T)))
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(matmul_kernel.matmul(ints, ints.T), ints @ ints.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_xent_kernel_matches_numpy_path(dtype):
    logits = (rng.standard_normal((60, 10)) * 4).astype(dtype)
    labels = rng.integers(0, 10, 60).astype(np.int32)
    logits[3, 2] = np.nan
    loss, backprop = xent_kernel.sparse_softmax_xent(logits, labels)
    s = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(s).sum(axis=1, keepdims=True))
    rows = np.arange(60)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(loss, lse[:, 0] - s[rows, labels], rtol=tol, atol=tol)
    want = np.exp(s - lse)
    want[rows, labels] -= 1
    np.testing.assert_allclose(backprop, want, rtol=tol, atol=tol)
    assert loss.dtype == backprop.dtype == dtype
    assert np.isnan(loss[3]) and np.isnan(backprop[3]).all()


def test_sparse_xent_bad_label_still_names_it():
    logits = tf.constant(rng.standard_normal((3, 4)).astype(np.float32))
    assert xent_kernel.sparse_softmax_xent(logits.numpy(), np.array([0, 4, 1])) is None
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value of 4"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 4, 1], logits=logits)


def test_sparse_xent_matches_torch():
    torch = pytest.importorskip("torch")
    logits = rng.standard_normal((60, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 60)
    ours = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        tf.constant(labels.astype(np.int32)), tf.constant(logits))
    theirs = torch.nn.functional.cross_entropy(torch.from_numpy(logits),
                                               torch.from_numpy(labels))
    np.testing.assert_allclose(ours.numpy(), theirs.item(), rtol=1e-6)


@pytest.mark.parametrize("activation", [None, fused_matmul.RELU])
def test_fused_matmul_gradients_by_finite_differences(activation):
    x, w, b = (rng.standard_normal(s) for s in ((5, 4), (4, 3), (3,)))
    check_grads(lambda x, w, b: apply(fused_matmul._fused_matmul, x, w, b,
                                      activation=activation), [x, w, b], order=2)


@pytest.mark.parametrize("activation", ["relu", None])
def test_eager_dense_equals_traced_dense_bit_for_bit(activation):
    layer = tf.keras.layers.Dense(7, activation=activation)
    x = tf.constant(rng.standard_normal((6, 5)).astype(np.float32))
    layer(x)
    layer.bias.assign(rng.standard_normal(7).astype(np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        return [y] + tape.gradient(loss, [x] + layer.trainable_variables)

    traced = tf.function(step)
    concrete = traced.get_concrete_function(x)
    traced_ops = [n.op.name for n in concrete.traced_graph.nodes]
    assert "_FusedMatMul" not in traced_ops and "MatMul" in traced_ops  # tracing never fuses
    fused = [n for n in concrete.graph.nodes if n.op is fused_matmul._fused_matmul]
    assert [n.attrs["activation"] for n in fused] == [activation and fused_matmul.RELU]
    eager = step(x)
    assert any(s.grad_fn is fused_matmul._fused_matmul.grad_fn for s in _recorded(layer, x))
    for e, g in zip(eager, traced(x)):
        np.testing.assert_array_equal(_bits(e.numpy()), _bits(g.numpy()))


def _recorded(layer, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        layer(x)
    return tape._entries


def test_dense_takes_unfused_ops_where_the_fused_one_does_not_apply():
    x = tf.constant(rng.standard_normal((2, 3, 4)).astype(np.float32))  # 3-D: reshaped
    for layer in (tf.keras.layers.Dense(2, activation="tanh"),
                  tf.keras.layers.Dense(2, use_bias=False)):
        out = layer(x[0])
        want = np.asarray(x[0]) @ layer.kernel.numpy()
        if layer.use_bias:
            want = np.tanh(want + layer.bias.numpy())
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(tf.keras.layers.Dense(2)(x).shape, (2, 3, 2))


def test_relu_op_gradient_and_tf_function_unchanged():
    x = rng.standard_normal((4, 5))
    check_grads(lambda x: apply(nn_ops._relu, x), [x])
    xt = tf.constant(x.astype(np.float32))
    np.testing.assert_array_equal(tf.nn.relu(xt).numpy(), tf.function(tf.nn.relu)(xt).numpy())


def test_sparse_categorical_loss_same_for_int32_int64_and_float_labels():
    logits = tf.constant(rng.standard_normal((8, 5)).astype(np.float32))
    labels = rng.integers(0, 5, 8)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    values = [loss(tf.constant(labels.astype(d)), logits).numpy()
              for d in (np.int32, np.int64, np.float32)]
    assert values[0] == values[1] == values[2]
    unknown_batch = tf.function(lambda y, p: loss(y, p), input_signature=[
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([None, 5], tf.float32)])
    np.testing.assert_allclose(unknown_batch(tf.constant(labels.astype(np.int32)), logits),
                               values[0], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_graph_sqrt_of_a_large_array_is_the_compiled_pass_with_numpys_bits(dtype):
    from tapeflow.kernels import activations

    x = tf.constant((rng.random((784, 128)) * 10).astype(dtype))
    small = tf.constant(rng.random((3, 4)).astype(dtype))
    f = tf.function(lambda x, s: (tf.sqrt(x), tf.sqrt(x * 2.0), tf.sqrt(s)))
    got = f(x, small)
    want = (np.sqrt(x.numpy()), np.sqrt(x.numpy() * dtype(2)), np.sqrt(small.numpy()))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
    code = f.get_concrete_function(x, small).code
    if activations._sqrt_nb is not None:
        assert code.count("= sqrt(") == 2 and ", out=" in code  # x * 2.0 dies into its root
    np.testing.assert_array_equal(activations.sqrt(x.numpy()[:, ::2].copy()),
                                  np.sqrt(x.numpy()[:, ::2]))
    strided = x.numpy()[:, ::2]
    np.testing.assert_array_equal(activations.sqrt(strided), np.sqrt(strided))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_gradient_sums_same_bits_eager_and_graph_and_near_exact(dtype):
    """A large gradient summed to a bias's shape (leading axes) takes the blocked sums
    (``kernels.bias.leading_sums``) in both modes; small ones and other axes stay NumPy's."""
    from tapeflow.kernels import bias as bias_kernels
    from tapeflow.ops import math_ops

    g = tf.constant(rng.standard_normal((32, 64, 4, 32)).astype(dtype))
    b, b2 = tf.zeros([4, 32], dtype), tf.zeros([1, 4, 32], dtype)
    eager = math_ops.unbroadcast(g, b).numpy()
    f = tf.function(lambda g, b, b2: (math_ops.unbroadcast(g, b), math_ops.unbroadcast(g, b2)))
    graph, kept = (t.numpy() for t in f(g, b, b2))
    np.testing.assert_array_equal(eager, graph)
    exact = g.numpy().astype(np.float64).sum(axis=(0, 1))
    assert np.abs(graph - exact).max() <= (1e-9 if dtype == np.float64 else 2e-4)
    np.testing.assert_allclose(kept[0], exact, rtol=1e-4, atol=1e-3)
    code = f.get_concrete_function(g, b, b2).code
    assert code.count("leading_sums(") == 1  # [1, 4, 32] keeps a size-1 axis: NumPy's
    assert bias_kernels.leading_sums(np.ones((3, 4), dtype), (4,)) is None  # small
