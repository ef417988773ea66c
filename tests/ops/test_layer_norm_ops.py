"""The fused layer norm (_LayerNorm / _LayerNormGrad) and softmax gradient (SoftmaxGrad) ops:
finite-difference gradients in float64 (second order too), the compiled loops vs the NumPy
fallback, eager vs tf.function, the Keras layer vs the unfused formula, and PyTorch."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.kernels import layer_norm as K
from tapeflow.ops import normalization_ops
from tapeflow.testing import check_grads


def _x(shape=(3, 4, 6), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_layer_norm_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    args = [_x(), rng.standard_normal(6), rng.standard_normal(6)]
    check_grads(lambda x, g, b: normalization_ops.layer_norm(x, g, b, 1e-3), args)
    check_grads(lambda x, g, b: normalization_ops.layer_norm(x, g, b, 1e-3), args, order=2)


def test_softmax_gradient_matches_finite_differences():
    check_grads(lambda x: tf.nn.softmax(x), [_x()])
    check_grads(lambda x: tf.nn.softmax(x, axis=1), [_x()])  # the unfused rule


def test_softmax_gradient_is_the_fused_op():
    x = tf.constant(_x().astype(np.float32))
    fn = tf.function(lambda x: tf.gradients(tf.reduce_sum(tf.nn.softmax(x) ** 2), x))
    assert "SoftmaxGrad" in str(fn.get_concrete_function(x).graph)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_fallback_matches_compiled_loops(monkeypatch, dtype):
    rng = np.random.default_rng(2)
    x, g = _x().astype(dtype), rng.standard_normal((3, 4, 6)).astype(dtype)
    gamma, beta = rng.standard_normal(6).astype(dtype), rng.standard_normal(6).astype(dtype)
    y = np.exp(x) / np.exp(x).sum(-1, keepdims=True)

    def run():
        out = K.forward(x, gamma, beta, 1e-3)
        return [*out, *K.backward(g, x, gamma, out[1], out[2]), K.softmax_grad(g, y),
                K.softmax(x)]

    compiled = run()
    monkeypatch.setattr(K, "_forward_nb", None)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(compiled, run()):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _layer_run(layer, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tf.reduce_sum(y * y * y)
    return [y] + tape.gradient(loss, [x] + layer.trainable_variables)


def test_layer_matches_unfused_formula_and_graph_matches_eager():
    x = tf.constant(_x((2, 5, 8), 3))
    layer = tf.keras.layers.LayerNormalization(dtype="float64")
    layer.build(x.shape)
    layer.gamma.assign(np.linspace(0.5, 1.5, 8))
    layer.beta.assign(np.linspace(-1, 1, 8))
    fused = [t.numpy() for t in _layer_run(layer, x)]

    def unfused(x):  # Keras's definition, in plain ops
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + layer.epsilon) * layer.gamma + layer.beta

    class Plain:
        trainable_variables = layer.trainable_variables
        __call__ = staticmethod(unfused)

    for a, b in zip(fused, _layer_run(Plain(), x)):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-10, atol=1e-12)
    graph = tf.function(lambda x: _layer_run(layer, x))(x)
    for a, b in zip(fused, graph):
        np.testing.assert_array_equal(a, b.numpy())


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x, g = _x((4, 7, 16), 5), rng.standard_normal((4, 7, 16))
    gamma, beta = rng.standard_normal(16), rng.standard_normal(16)
    xs, gs, bs = (tf.constant(v) for v in (x, gamma, beta))
    with tf.GradientTape() as tape:
        tape.watch([xs, gs, bs])
        y = normalization_ops.layer_norm(xs, gs, bs, 1e-3)
        s = tf.nn.softmax(xs)
        loss = tf.reduce_sum(y * g) + tf.reduce_sum(s * g)
    ours = [y, s] + tape.gradient(loss, [xs, gs, bs])
    xt, gt, bt = (torch.from_numpy(v).requires_grad_() for v in (x, gamma, beta))
    yt = torch.nn.functional.layer_norm(xt, (16,), gt, bt, eps=1e-3)
    st = torch.softmax(xt, -1)
    ((yt * torch.from_numpy(g)).sum() + (st * torch.from_numpy(g)).sum()).backward()
    for a, b in zip(ours, [yt, st, xt.grad, gt.grad, bt.grad]):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_bad_parameters_name_the_op():
    with pytest.raises(Exception, match="_LayerNorm.*last dimension 6"):
        normalization_ops.layer_norm(_x(), np.ones(5), np.zeros(6), 1e-3)
