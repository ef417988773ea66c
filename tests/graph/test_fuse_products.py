"""Products fused with their bias (and ReLU): MatMul -> AddV2 [-> Relu] as ``_FusedMatMul``,
Einsum -> AddV2 as ``_EinsumBias``. The bias is added to each slice of a split product on the
slice's thread; the values are the unfused ops' bits, eager and graph, idle cores or busy."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import threads
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes import fuse
from tapeflow.kernels import einsum as E
from tapeflow.kernels import matmul as M
from tapeflow.kernels import parallel
from tapeflow.ops import fused_matmul
from tapeflow.testing import check_grads

rng = np.random.default_rng(0)


def _force_split(monkeypatch, idle: bool) -> None:
    monkeypatch.setattr(threads, "_intra_op", 3)
    monkeypatch.setattr(M, "SPLIT_FLOPS", 0)
    monkeypatch.setattr(parallel, "idle_core", lambda: idle)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("equation, sa, sb, sbias", [
    ("abc,cde->abde", (3, 5, 8), (8, 2, 4), (2, 4)),   # a projection: bias over two axes
    ("abcd,cde->abe", (3, 5, 2, 4), (2, 4, 6), (6,)),  # the attention output's
    ("ab,bc->ac", (9, 4), (4, 7), (7,)),
    ("abc,cd->adb", (2, 3, 4), (4, 5), (3,)),          # columns not last: added afterwards
])
def test_einsum_bias_kernel_is_einsum_plus_bias_split_or_not(monkeypatch, equation, sa, sb,
                                                             sbias):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    bias = rng.standard_normal(sbias).astype(np.float32)
    want = E.einsum(equation, a, b) + bias
    np.testing.assert_array_equal(_bits(E.einsum(equation, a, b, bias=bias)), _bits(want))
    for idle in (True, False):
        _force_split(monkeypatch, idle)
        split_want = E.einsum(equation, a, b) + bias
        np.testing.assert_array_equal(_bits(E.einsum(equation, a, b, bias=bias)),
                                      _bits(split_want))
        np.testing.assert_allclose(split_want, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("relu", [False, True])
def test_split_product_epilogue_same_bits_as_product_then_bias(monkeypatch, relu):
    _force_split(monkeypatch, idle=True)
    calls = []
    real = parallel.split
    monkeypatch.setattr(parallel, "split", lambda *a, **k: calls.append(k) or real(*a, **k))
    for sa, sb in (((300, 6), (6, 5)), ((4, 9), (9, 11))):  # cut by rows, then by columns
        x, w = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(
            np.float32)
        bias = rng.standard_normal(sb[1]).astype(np.float32)
        calls.clear()
        got = apply(fused_matmul._fused_matmul, x, w, bias,
                    activation=fused_matmul.RELU if relu else None).numpy()
        want = M.matmul(x, w) + bias
        if relu:
            want = np.maximum(want, 0)
        assert calls
        np.testing.assert_array_equal(got, want)


def test_einsum_bias_gradients_by_finite_differences_and_torch():
    a, b, bias = (rng.standard_normal(s) for s in ((2, 3, 4), (4, 2, 3), (2, 3)))
    eq = "abc,cde->abde"
    check_grads(lambda a, b, bias: apply(fused_matmul._einsum_bias, a, b, bias, equation=eq),
                [a, b, bias], order=1)
    torch = pytest.importorskip("torch")
    ts = [torch.tensor(v, requires_grad=True) for v in (a, b, bias)]
    y = torch.einsum(eq, ts[0], ts[1]) + ts[2]
    g = rng.standard_normal(y.shape)
    y.backward(torch.tensor(g))
    xs = [tf.constant(v) for v in (a, b, bias)]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        out = apply(fused_matmul._einsum_bias, *xs, equation=eq)
    grads = tape.gradient(out, xs, output_gradients=tf.constant(g))
    np.testing.assert_allclose(out.numpy(), y.detach().numpy(), rtol=1e-12)
    for got, t in zip(grads, ts):
        np.testing.assert_allclose(got.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def _dense_and_attention(x):
    y = tf.keras.layers.Dense(6, activation="relu", name="d1")(x)
    y = tf.keras.layers.Dense(5, name="d2")(y)
    return tf.keras.layers.EinsumDense("abc,cd->abd", output_shape=(None, 4), bias_axes="d",
                                       name="e")(y)


def test_training_step_fuses_products_and_equals_eager_and_unfused():
    tf.random.set_seed(1)
    inp = tf.keras.Input((7, 3))
    model = tf.keras.Model(inp, _dense_and_attention(inp))
    x = tf.constant(rng.standard_normal((2, 7, 3)).astype(np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(x)))
        return [loss] + tape.gradient(loss, model.trainable_variables)

    traced = tf.function(step)
    concrete = traced.get_concrete_function(x)
    assert "fuse: fused 4 chains (_EinsumBias x1, _FusedMatMul x3)" in \
        concrete.optimization_report()
    names = [n.op.name for n in concrete.graph.nodes]
    assert "Relu" not in names and names.count("_FusedMatMul") == 2
    assert names.count("_EinsumBias") == 1 and names.count("Einsum") == 2  # its gradients
    eager = step(x)
    for e, g in zip(eager, traced(x)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    unfused, _ = fuse.run(concrete.traced_graph)  # the pass alone, against no pass at all
    from tapeflow.graph.codegen import compile_graph
    plain = compile_graph(concrete.traced_graph, name="plain")
    once = compile_graph(unfused, name="fused")
    args = [x.numpy()]
    for p, f in zip(plain(*args), once(*args)):
        np.testing.assert_array_equal(_bits(np.asarray(p)), _bits(np.asarray(f)))


def test_bias_of_the_wrong_shape_or_a_transposed_product_is_not_fused():
    x, w = (tf.constant(rng.standard_normal(s).astype(np.float32)) for s in ((4, 3), (5, 3)))
    b = tf.constant(rng.standard_normal((4, 5)).astype(np.float32))
    f = tf.function(lambda x, w, b: tf.matmul(x, w, transpose_b=True) + b[0] +
                    tf.matmul(x, w, transpose_b=True) * 0 + b)
    names = [n.op.name for n in f.get_concrete_function(x, w, b).graph.nodes]
    assert "_FusedMatMul" not in names
    np.testing.assert_allclose(f(x, w, b).numpy(), (x.numpy() @ w.numpy().T) + b.numpy()[0]
                               + b.numpy(), rtol=1e-6)
