"""The fused LSTM sequence op (ops/recurrent_ops.py, kernels/lstm.py): finite-difference
gradients (float64), the same values and gradients as the unrolled Keras steps, eager vs
tf.function, the NumPy fallback vs the compiled loops, and PyTorch's nn.LSTM."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.kernels import lstm as K
from tapeflow.ops import recurrent_ops
from tapeflow.testing import check_grads

B, T, U, F = 3, 5, 4, 2


def _inputs(seed=0, dtype=np.float64, batch=B):
    """(projected [T, B, 4U], h0, c0, recurrent kernel, bias)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((T, batch, 4 * U)).astype(dtype),
            rng.standard_normal((batch, U)).astype(dtype),
            rng.standard_normal((batch, U)).astype(dtype),
            (0.5 * rng.standard_normal((U, 4 * U))).astype(dtype),
            (0.5 * rng.standard_normal(4 * U)).astype(dtype))


def _grads_in(seed, batch=B, dtype=np.float64):
    """Gradients of (hs [T, B, U], h_T, c_T)."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(s).astype(dtype)
                 for s in ((T, batch, U), (batch, U), (batch, U)))


def test_lstm_sequence_gradients_match_finite_differences():
    check_grads(lambda *a: recurrent_ops.lstm_sequence(*a), _inputs())


def test_numpy_fallback_matches_compiled_loops(monkeypatch):
    args = _inputs(1)
    g = _grads_in(2)
    out = K.forward(*args)
    grads = K.backward(*g, *args[1:4], out[0], *out[3:])
    monkeypatch.setattr(K, "_step_nb", None)
    assert K._loops(np.dtype(np.float64))[0] is K._step_np
    out_np = K.forward(*args)
    grads_np = K.backward(*g, *args[1:4], out_np[0], *out_np[3:])
    for a, b in zip(out + grads, out_np + grads_np):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _model(fused: bool, **kwargs):
    """Embedding-free LSTM layer; a sigmoid written as a lambda makes Keras's unrolled path run
    (the fused op is taken only for the default activations)."""
    tf.random.set_seed(3)
    act = "sigmoid" if fused else (lambda x: tf.sigmoid(x))
    layer = tf.keras.layers.LSTM(U, recurrent_activation=act, dtype="float64", **kwargs)
    layer.build((B, T, F))
    assert layer.cell.fused() is fused
    return layer


def _run(layer, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = layer(x)
        outs = out if isinstance(out, list) else [out]
        loss = sum(tf.reduce_sum(o * o) for o in outs)
    return [o.numpy() for o in outs], [g.numpy() for g in
                                       tape.gradient(loss, [x] + layer.trainable_variables)]


@pytest.mark.parametrize("kwargs", [{}, {"return_sequences": True, "return_state": True},
                                    {"go_backwards": True, "return_state": True}])
def test_fused_layer_matches_unrolled_steps(kwargs):
    x = tf.constant(np.random.default_rng(4).standard_normal((B, T, F)))
    fused, unrolled = _model(True, **kwargs), _model(False, **kwargs)
    for v_f, v_u in zip(fused.trainable_variables, unrolled.trainable_variables):
        v_f.assign(v_u)
    for a, b in zip(*[sum(_run(m, x), []) for m in (fused, unrolled)]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_eager_and_tf_function_agree():
    layer = _model(True, return_sequences=True)
    x = tf.constant(np.random.default_rng(5).standard_normal((B, T, F)))
    eager = sum(_run(layer, x), [])
    graph = sum(tf.function(lambda x: _run_symbolic(layer, x))(x), [])
    for a, b in zip(eager, graph):
        np.testing.assert_array_equal(a, np.asarray(b))


def _run_symbolic(layer, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = layer(x)
        loss = tf.reduce_sum(out * out)
    return [[out], tape.gradient(loss, [x] + layer.trainable_variables)]


def test_matches_pytorch_lstm():
    torch = pytest.importorskip("torch")
    layer = _model(True, return_sequences=True, return_state=True)
    x_np = np.random.default_rng(6).standard_normal((B, T, F))
    outs, grads = _run(layer, tf.constant(x_np))
    kernel, recurrent, bias = (v.numpy() for v in layer.trainable_variables)
    net = torch.nn.LSTM(F, U, batch_first=True).double()
    with torch.no_grad():  # both use the gate order (i, f, g, o); torch's weights are [4U, in]
        net.weight_ih_l0.copy_(torch.from_numpy(kernel.T))
        net.weight_hh_l0.copy_(torch.from_numpy(recurrent.T))
        net.bias_ih_l0.copy_(torch.from_numpy(bias))
        net.bias_hh_l0.zero_()
    xt = torch.from_numpy(x_np).requires_grad_()
    seq, (h, c) = net(xt)
    ((seq * seq).sum() + (h * h).sum() + (c * c).sum()).backward()
    for ours, theirs in zip(outs, (seq, h[0], c[0])):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    theirs = [xt.grad, net.weight_ih_l0.grad.T, net.weight_hh_l0.grad.T, net.bias_ih_l0.grad]
    for ours, t in zip(grads, theirs):
        np.testing.assert_allclose(ours, t.numpy(), rtol=1e-9, atol=1e-11)


def test_bad_recurrent_kernel_names_the_op():
    p, h0, c0, _, bias = _inputs()
    with pytest.raises(Exception, match="_LSTMSequence.*recurrent kernel"):
        recurrent_ops.lstm_sequence(p, h0, c0, np.zeros((U, 3 * U)), bias)


@pytest.mark.parametrize("idle", [True, False])
def test_batch_slices_give_the_same_bits_idle_or_busy(monkeypatch, idle):
    """The sequences of a batch run as slices (one per idle core, else one after another):
    the slices depend on the size alone, so a busy machine gives an idle one's bits."""
    from tapeflow.framework import threads
    from tapeflow.kernels import parallel

    b = 24
    args, g = _inputs(4, batch=b), _grads_in(5, batch=b)

    def run():
        out = K.forward(*args)
        return list(out) + list(K.backward(*g, *args[1:4], out[0], *out[3:]))

    whole = run()
    monkeypatch.setattr(threads, "_intra_op", 3)
    monkeypatch.setattr(K, "SPLIT_FLOPS", 0)
    assert K._batch_slices(b, T, U) == 3
    monkeypatch.setattr(parallel, "idle_core", lambda: True)
    sliced = run()
    monkeypatch.setattr(parallel, "idle_core", lambda: idle)
    for a, c, w in zip(sliced, run(), whole):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_allclose(a, w, rtol=1e-12, atol=1e-12)


def test_float32_tanh_is_within_2e7_of_exact_and_keeps_nan():
    """float32 gates use Eigen's rational tanh (TensorFlow's CPU form), compiled to SIMD."""
    pytest.importorskip("numba")
    z = np.concatenate([np.linspace(-12, 12, 4001), [0.0, 1e-6, -3e-4, np.inf, -np.inf,
                                                     np.nan]]).astype(np.float32)
    x = np.zeros((1, 4 * z.size), np.float32)  # every element as an input-gate argument
    x[0, :z.size] = 2 * z  # the step halves sigmoid arguments: tanh(z) lands in the gate
    out = [np.zeros((1, z.size), np.float32) for _ in range(4)]
    K._step_nb(x, np.zeros_like(x), np.zeros(4 * z.size, np.float32), *out)
    got = (x[0, :z.size] - 0.5) * 2  # back from 0.5 * tanh + 0.5
    exact = np.tanh(z.astype(np.float64))
    np.testing.assert_allclose(got[:-1], exact[:-1], rtol=0, atol=4e-7)  # +-inf: +-1 too
    assert np.isnan(got[-1])


def test_float32_sequence_matches_float64():
    args64, g64 = _inputs(7, batch=16), _grads_in(8, batch=16)
    args32 = [a.astype(np.float32) for a in args64]
    g32 = [a.astype(np.float32) for a in g64]
    for args, g, kind in ((args64, g64, 64), (args32, g32, 32)):
        out = K.forward(*args)
        res = list(out[:3]) + list(K.backward(*g, *args[1:4], out[0], *out[3:]))
        if kind == 64:
            want = res
    for a, w in zip(res, want):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, w, rtol=2e-5, atol=2e-5 * np.abs(w).max())


@pytest.mark.parametrize("used", ["h", "hs_c", "c"])
def test_outputs_without_a_gradient_get_none_not_zeros(used):
    """Only the outputs the loss reads get a gradient: the rule gets None for the rest (no
    zeros the size of every saved output), with finite differences' gradients in float64 and
    the same bits as the kernel given explicit zeros."""
    args = _inputs(4)

    def loss(*a):
        hs, h, c = recurrent_ops.lstm_sequence(*a)
        parts = {"h": [h], "hs_c": [hs, c], "c": [c]}[used]
        return sum(tf.reduce_sum(tf.sin(p)) for p in parts)

    check_grads(loss, args)
    tensors = [tf.constant(a) for a in args]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        value = loss(*tensors)
    grads = tape.gradient(value, tensors)
    out = K.forward(*args)
    zeros = np.zeros_like(out[0])
    g_hs = np.cos(out[0]) if used == "hs_c" else zeros
    g_h = np.cos(out[1]) if used == "h" else np.zeros_like(out[1])
    g_c = np.cos(out[2]) if used != "h" else np.zeros_like(out[2])
    want = K.backward(g_hs, g_h, g_c, *args[1:4], out[0], *out[3:])
    for got, w in zip(grads, [want[0], want[1], want[2], want[3], want[4]]):
        np.testing.assert_array_equal(got.numpy(), w)
    graph_grads = tf.function(lambda *t: tf.gradients(loss(*t), list(t)))(*tensors)
    for got, w in zip(graph_grads, grads):
        np.testing.assert_allclose(got.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)
