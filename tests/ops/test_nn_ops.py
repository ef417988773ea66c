"""nn ops, one row each: forward vs NumPy, gradients vs finite differences (to 2nd order where
the op is smooth), forward and backward vs PyTorch, and traced graph vs eager."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import testing
from tapeflow.testing import OpCase, check_grads


def away_from_kinks(*shape, kinks=(0.0,)):
    """Normal values kept 0.05 away from each kink (finite differences straddle no kink)."""
    def make(rng):
        x = rng.standard_normal(shape) * 3
        for k in kinks:
            near = np.abs(x - k) < 0.05
            x[near] = k + 0.1 * np.sign(x[near] - k + 1e-9)
        return [x]
    return make


def normal(*shape, scale=1.0):
    return lambda rng: [rng.standard_normal(shape) * scale]


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    s = x - x.max(axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis, keepdims=True))


def sparse_inputs(rng):
    return [rng.standard_normal((5, 4)) * 2, rng.integers(0, 4, size=5)]


def dense_inputs(rng):
    labels = rng.random((5, 4))
    return [rng.standard_normal((5, 4)) * 2, labels / labels.sum(1, keepdims=True)]


def torch_fn(name):
    """A torch twin resolved lazily (torch is optional)."""
    def call(*args, **kwargs):
        import torch

        obj = torch
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj(*args, **kwargs)
    return call


def _torch_sparse_xent(logits, labels):
    import torch

    return torch.nn.functional.cross_entropy(logits, labels.long(), reduction="none")


def _torch_xent(logits, labels):
    import torch

    return -(labels * torch.log_softmax(logits, -1)).sum(-1)


def _torch_sigmoid_xent(logits, labels):
    import torch

    return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels,
                                                                reduction="none")


def _np_moments(x, axes, keepdims):
    return x.mean(axes, keepdims=keepdims), x.var(axes, keepdims=keepdims)


CASES = [
    OpCase("relu", tf.nn.relu, lambda x: np.maximum(x, 0), away_from_kinks(3, 4),
           torch_fn("relu"), order=2),
    OpCase("relu6", tf.nn.relu6, lambda x: np.clip(x, 0, 6), away_from_kinks(3, 4, kinks=(0, 6)),
           torch_fn("nn.functional.relu6"), order=2),
    OpCase("leaky_relu", lambda x: tf.nn.leaky_relu(x, 0.1),
           lambda x: np.where(x > 0, x, 0.1 * x), away_from_kinks(3, 4),
           lambda x: __import__("torch").nn.functional.leaky_relu(x, 0.1), order=2),
    OpCase("elu", tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), away_from_kinks(3, 4),
           torch_fn("nn.functional.elu"), order=2),
    OpCase("selu", tf.nn.selu,
           lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
           away_from_kinks(3, 4), torch_fn("selu"), order=2),
    OpCase("softplus", tf.nn.softplus, lambda x: np.log1p(np.exp(x)), normal(3, 4),
           torch_fn("nn.functional.softplus"), order=2),
    OpCase("softsign", tf.nn.softsign, lambda x: x / (1 + np.abs(x)), away_from_kinks(3, 4),
           torch_fn("nn.functional.softsign"), order=2),
    OpCase("gelu", tf.nn.gelu, lambda x: x * 0.5 * (1 + np.vectorize(__import__("math").erf)(
        x / np.sqrt(2))), normal(3, 4), torch_fn("nn.functional.gelu"), order=2),
    OpCase("gelu_tanh", lambda x: tf.nn.gelu(x, approximate=True),
           lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
           normal(3, 4), lambda x: __import__("torch").nn.functional.gelu(x, approximate="tanh")),
    OpCase("softmax", tf.nn.softmax, np_softmax, normal(3, 5, scale=3),
           lambda x: x.softmax(-1), order=2),
    OpCase("softmax_axis0", lambda x: tf.nn.softmax(x, axis=0), lambda x: np_softmax(x, 0),
           normal(3, 5), lambda x: x.softmax(0), order=2),
    OpCase("log_softmax", tf.nn.log_softmax, np_log_softmax, normal(3, 5, scale=3),
           lambda x: x.log_softmax(-1), order=2),
    OpCase("log_softmax_axis1_of_3", lambda x: tf.nn.log_softmax(x, axis=1),
           lambda x: np_log_softmax(x, 1), normal(2, 3, 4), lambda x: x.log_softmax(1), order=2),
    OpCase("sparse_softmax_xent",
           lambda lg, lb: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lb, logits=lg),
           lambda lg, lb: -np_log_softmax(lg)[np.arange(5), lb], sparse_inputs,
           _torch_sparse_xent, order=2),
    OpCase("softmax_xent",
           lambda lg, lb: tf.nn.softmax_cross_entropy_with_logits(labels=lb, logits=lg),
           lambda lg, lb: -(lb * np_log_softmax(lg)).sum(-1), dense_inputs, _torch_xent,
           order=2),
    OpCase("softmax_xent_unnormalized_labels",
           lambda lg, lb: tf.nn.softmax_cross_entropy_with_logits(labels=lb, logits=lg),
           lambda lg, lb: -(lb * np_log_softmax(lg)).sum(-1),
           lambda rng: [rng.standard_normal((3, 4)), rng.random((3, 4)) * 2], _torch_xent),
    OpCase("softmax_xent_axis0",
           lambda lg, lb: tf.nn.softmax_cross_entropy_with_logits(labels=lb, logits=lg, axis=0),
           lambda lg, lb: -(lb * np_log_softmax(lg, 0)).sum(0),
           lambda rng: [rng.standard_normal((4, 3)), rng.random((4, 3))],
           lambda lg, lb: -(lb * lg.log_softmax(0)).sum(0)),
    OpCase("sigmoid_xent",
           lambda lg, lb: tf.nn.sigmoid_cross_entropy_with_logits(labels=lb, logits=lg),
           lambda x, z: np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))),
           lambda rng: [rng.standard_normal((3, 4)) * 4, rng.random((3, 4))],
           _torch_sigmoid_xent, order=2),
    OpCase("bias_add", tf.nn.bias_add, lambda x, b: x + b,
           lambda rng: [rng.standard_normal((2, 3, 3, 4)), rng.standard_normal(4)],
           lambda x, b: x + b, order=2),
    OpCase("bias_add_nchw", lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"),
           lambda x, b: x + b[:, None, None],
           lambda rng: [rng.standard_normal((2, 4, 3, 3)), rng.standard_normal(4)],
           lambda x, b: x + b[:, None, None], order=2),
    OpCase("moments", lambda x: tf.nn.moments(x, [0, 1, 2]),
           lambda x: _np_moments(x, (0, 1, 2), False), normal(2, 3, 3, 4),
           lambda x: (x.mean((0, 1, 2)), x.var((0, 1, 2), unbiased=False)), order=2),
    OpCase("moments_keepdims", lambda x: tf.nn.moments(x, [1], keepdims=True),
           lambda x: _np_moments(x, (1,), True), normal(3, 5),
           lambda x: (x.mean(1, keepdim=True), x.var(1, keepdim=True, unbiased=False))),
    OpCase("batch_normalization",
           lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
           lambda x, m, v, o, s: (x - m) / np.sqrt(v + 1e-3) * s + o,
           lambda rng: [rng.standard_normal((4, 3)), rng.standard_normal(3), rng.random(3) + 0.5,
                        rng.standard_normal(3), rng.standard_normal(3)],
           lambda x, m, v, o, s: (x - m) / (v + 1e-3).sqrt() * s + o, order=2),
    OpCase("l2_normalize", lambda x: tf.nn.l2_normalize(x, axis=1),
           lambda x: x / np.sqrt((x * x).sum(1, keepdims=True)), normal(3, 4),
           lambda x: __import__("torch").nn.functional.normalize(x, dim=1), order=2),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward(case):
    testing.check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradient(case):
    testing.check_case_grads(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.torch_fn is not None], ids=str)
def test_vs_torch(case):
    torch = pytest.importorskip("torch")
    testing.check_torch(case, torch)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_graph_matches_eager(case, tf_function):
    testing.check_graph(case, tf_function)


# --- behaviour beyond the table ------------------------------------------------------------------


def test_relu_gradient_at_zero_is_zero():
    x = tf.constant([-1.0, 0.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.relu(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 0.0, 1.0])


def test_sigmoid_xent_gradient_at_zero_logit():
    x, z = tf.constant([0.0, 0.0]), tf.constant([0.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), [0.5, -0.5])


def test_softmax_and_xent_are_stable_for_huge_logits():
    logits = tf.constant([[1000.0, 0.0, -1000.0]])
    np.testing.assert_allclose(tf.nn.softmax(logits).numpy(), [[1.0, 0.0, 0.0]])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([1]), logits=logits)
    np.testing.assert_allclose(loss.numpy(), [1000.0])
    assert np.isfinite(tf.nn.log_softmax(logits).numpy()).all()


def test_sparse_xent_labels_of_rank_2():
    rng = np.random.default_rng(0)
    logits, labels = rng.standard_normal((2, 3, 4)), rng.integers(0, 4, (2, 3))
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.shape == (2, 3)
    want = -np_log_softmax(logits)[np.arange(2)[:, None], np.arange(3), labels]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)


def test_sparse_xent_label_out_of_range_names_the_value_and_the_line():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0, 7]),
                                                       logits=tf.zeros([2, 3]))
    msg = str(info.value)
    assert "label value of 7" in msg and "[0, 3)" in msg and "test_nn_ops.py" in msg


def test_xent_shape_mismatch_is_a_clear_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"same shape.*\(2, 3\).*\(2, 4\)"):
        tf.nn.softmax_cross_entropy_with_logits(labels=tf.zeros([2, 4]), logits=tf.zeros([2, 3]))


def test_bias_add_wrong_length_names_op_shapes_and_line():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.nn.bias_add(tf.zeros([2, 3, 3, 4]), tf.zeros([3]))
    msg = str(info.value)
    assert "BiasAdd" in msg and "[2, 3, 3, 4]" in msg and "test_nn_ops.py" in msg


def test_second_order_through_sparse_xent_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    logits, labels = rng.standard_normal((4, 5)), rng.integers(0, 5, 4)
    x = tf.constant(logits)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x))
        g = inner.gradient(loss, x)
        gsq = tf.reduce_sum(g * g)
    ours = outer.gradient(gsq, x).numpy()
    xt = torch.tensor(logits, requires_grad=True)
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor(labels), reduction="sum")
    (gt,) = torch.autograd.grad(lt, xt, create_graph=True)
    (want,) = torch.autograd.grad((gt * gt).sum(), xt)
    np.testing.assert_allclose(ours, want.numpy(), rtol=1e-10, atol=1e-12)


# --- fused batch norm ---------------------------------------------------------------------------


def _bn_inputs(rng, shape=(3, 4, 4, 5)):
    return [rng.standard_normal(shape) * 2 + 1, rng.standard_normal(shape[-1]),
            rng.standard_normal(shape[-1])]


def test_fused_batch_norm_forward():
    x, scale, offset = _bn_inputs(np.random.default_rng(0))
    y, mean, var = tf.nn.fused_batch_norm(tf.constant(x.astype(np.float32)), scale.astype(
        np.float32), offset.astype(np.float32), epsilon=1e-3)
    m, v = x.mean((0, 1, 2)), x.var((0, 1, 2))
    np.testing.assert_allclose(y.numpy(), (x - m) / np.sqrt(v + 1e-3) * scale + offset,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-5, atol=1e-6)
    n = x.size // x.shape[-1]
    np.testing.assert_allclose(var.numpy(), v * n / (n - 1), rtol=1e-5)  # Bessel, as TF


def test_fused_batch_norm_gradients_to_second_order():
    check_grads(lambda x, s, o: tf.nn.fused_batch_norm(x, s, o, epsilon=1e-3)[0],
                _bn_inputs(np.random.default_rng(1), (2, 3, 2, 3)), order=2)


def test_fused_batch_norm_statistics_outputs_are_differentiable():
    check_grads(lambda x, s, o: tf.nn.fused_batch_norm(x, s, o)[1:],
                _bn_inputs(np.random.default_rng(2), (4, 3)))


def test_fused_batch_norm_with_given_statistics_replays_them():
    """FusedBatchNorm(x, scale, offset, mean, variance): x's own statistics, given (a RevNet
    recompute replays them), give the same outputs, and the training-mode gradient with
    respect to x, statistics as functions of x; the given ones get their outputs' gradient."""
    from tapeflow.framework.dispatch import apply
    from tapeflow.ops import normalization_ops

    rng = np.random.default_rng(8)
    x, scale, offset = rng.standard_normal((3, 2, 2, 4)), rng.standard_normal(4), \
        rng.standard_normal(4)
    _, mean, var = (t.numpy() for t in tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3))

    def replayed(x, scale, offset, mean, var):
        return apply(normalization_ops._fused_batch_norm, x, scale, offset, mean, var,
                     epsilon=1e-3)[0]

    for got, want in zip(apply(normalization_ops._fused_batch_norm, x, scale, offset, mean,
                               var, epsilon=1e-3),
                         apply(normalization_ops._fused_batch_norm, x, scale, offset,
                               epsilon=1e-3)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    with tf.GradientTape(persistent=True) as tape:
        args = [tf.constant(a) for a in (x, scale, offset, mean, var)]
        tape.watch(args)
        weights = tf.constant(rng.standard_normal(x.shape))
        loss = tf.reduce_sum(replayed(*args) * weights)
        own = tf.reduce_sum(tf.nn.fused_batch_norm(*args[:3], epsilon=1e-3)[0] * weights)
    for got, want in zip(tape.gradient(loss, args[:3]), tape.gradient(own, args[:3])):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    for g in tape.gradient(loss, args[3:]):  # y does not depend on them: it is x's own
        assert g is None or not g.numpy().any()
    with pytest.raises(tf.errors.InvalidArgumentError, match="given statistics must be"):
        apply(normalization_ops._fused_batch_norm, x, scale, offset, mean[:3], var,
              epsilon=1e-3)


def test_fused_batch_norm_vs_torch_training():
    torch = pytest.importorskip("torch")
    x, scale, offset = _bn_inputs(np.random.default_rng(4), (4, 3, 3, 6))
    cot = np.random.default_rng(5).standard_normal(x.shape)
    xs, ss, os_ = tf.constant(x), tf.constant(scale), tf.constant(offset)
    with tf.GradientTape() as tape:
        tape.watch([xs, ss, os_])
        y, _, var = tf.nn.fused_batch_norm(xs, ss, os_, epsilon=1e-5)
        loss = tf.reduce_sum(y * cot)
    ours = tape.gradient(loss, [xs, ss, os_])
    xt = torch.tensor(x.transpose(0, 3, 1, 2).copy(), requires_grad=True)
    st, ot = torch.tensor(scale, requires_grad=True), torch.tensor(offset, requires_grad=True)
    running_var = torch.zeros(6, dtype=torch.float64)
    yt = torch.nn.functional.batch_norm(xt, torch.zeros(6, dtype=torch.float64), running_var,
                                        st, ot, training=True, momentum=1.0, eps=1e-5)
    (yt * torch.tensor(cot.transpose(0, 3, 1, 2))).sum().backward()
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy().transpose(0, 2, 3, 1), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(var.numpy(), running_var.numpy(), rtol=1e-10)
    for got, want in zip(ours, [xt.grad.numpy().transpose(0, 2, 3, 1), st.grad, ot.grad]):
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-9, atol=1e-10)


def test_fused_batch_norm_nchw_inference_and_moving_average():
    x, scale, offset = _bn_inputs(np.random.default_rng(6), (2, 3, 3, 4))
    y_nhwc, mean, var = tf.nn.fused_batch_norm(x, scale, offset)
    y_nchw, _, _ = tf.nn.fused_batch_norm(x.transpose(0, 3, 1, 2), scale, offset,
                                          data_format="NCHW")
    np.testing.assert_allclose(y_nchw.numpy(), y_nhwc.numpy().transpose(0, 3, 1, 2),
                               rtol=1e-12)
    y_inf, _, _ = tf.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var,
                                         is_training=False)
    want = (x - mean.numpy()) / np.sqrt(var.numpy() + 1e-3) * scale + offset
    np.testing.assert_allclose(y_inf.numpy(), want, rtol=1e-12)
    old_m, old_v = np.ones(4), np.full(4, 2.0)
    _, m2, v2 = tf.nn.fused_batch_norm(x, scale, offset, mean=old_m, variance=old_v,
                                       exponential_avg_factor=0.1)
    np.testing.assert_allclose(m2.numpy(), 0.9 * old_m + 0.1 * mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(v2.numpy(), 0.9 * old_v + 0.1 * var.numpy(), rtol=1e-12)


def test_fused_batch_norm_graph_matches_eager(tf_function):
    x, scale, offset = (a.astype(np.float32) for a in _bn_inputs(np.random.default_rng(7)))

    def step(x, s, o):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y, m, v = tf.nn.fused_batch_norm(x, s, o)
            loss = tf.reduce_sum(y * y * y)
        return y, m, v, tape.gradient(loss, x)

    eager = step(tf.constant(x), tf.constant(scale), tf.constant(offset))
    traced = tf_function(step)(tf.constant(x), tf.constant(scale), tf.constant(offset))
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(np.asarray(t), e.numpy(), rtol=1e-5, atol=1e-5)


# --- dropout -------------------------------------------------------------------------------------


def test_dropout_keeps_expected_fraction_and_scales():
    x = tf.ones([200, 100])
    y = tf.nn.dropout(x, rate=0.25, seed=3).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.02


def test_dropout_is_repeatable_with_seeds():
    x = tf.ones([50, 10])
    tf.random.set_seed(11)
    a = [tf.nn.dropout(x, 0.5, seed=1).numpy() for _ in range(2)]
    tf.random.set_seed(11)
    b = [tf.nn.dropout(x, 0.5, seed=1).numpy() for _ in range(2)]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert (a[0] != a[1]).any()


def test_dropout_noise_shape_broadcasts_and_gradient_is_the_mask():
    x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4) + 1)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.dropout(x, 0.5, noise_shape=[2, 1, 4], seed=5)
    g = tape.gradient(y, x).numpy()
    mask = y.numpy() / x.numpy()
    assert (mask == mask[:, :1, :]).all()  # one draw per (batch, channel) pair
    np.testing.assert_array_equal(g, mask)


@pytest.mark.parametrize("rate", [76.5 / 256, 0.1, 0.5, 0.999])
def test_dropout_keep_probability_is_one_minus_rate(rate):
    """2**22 draws pin the kept fraction to ~5e-4; 76.5/256 puts half of the entries whose first
    random byte ties the threshold on each side, so mishandled ties would show (1/512 off)."""
    n = 1 << 22
    kept = tf.nn.dropout(tf.ones([n]), rate=rate, seed=13).numpy() != 0
    p = 1.0 - rate
    sigma = np.sqrt(p * (1 - p) / n)
    assert abs(kept.mean() - p) < 5 * sigma
    lanes = kept.reshape(-1, 8).mean(axis=0)  # each lane reads one byte of the raw 64-bit draws
    assert np.abs(lanes - p).max() < 5 * sigma * np.sqrt(8)
    both = (kept[0::2] & kept[1::2]).mean()  # neighbours independent: both kept w.p. p**2
    assert abs(both - p * p) < 5 * np.sqrt(p * p * (1 - p * p) / (n // 2))


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_dropout_mask_dtype_and_scale(dtype):
    x = tf.ones([64, 33], dtype=dtype)
    y = tf.nn.dropout(x, rate=0.3, seed=4).numpy()
    assert y.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(np.unique(y), np.array([0.0, 1.0 / 0.7]).astype(y.dtype))
    np.testing.assert_array_equal(tf.nn.dropout(x, rate=0.0, seed=4).numpy(), np.ones((64, 33)))


def test_dropout_rejects_bad_rate():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"rate must be in \[0, 1\)"):
        tf.nn.dropout(tf.ones([2]), rate=1.0)


def test_batch_norm_numpy_fallback_matches_compiled(monkeypatch):
    from tapeflow.kernels import batch_norm as bn

    rng = np.random.default_rng(7)
    x = (rng.standard_normal((4, 5, 3, 6)) * 3 + 2).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    scale, offset = rng.standard_normal(6).astype(np.float32), np.full(6, 0.5, np.float32)

    def run():
        y, mean, var, inv = bn.forward(x, scale, offset, 1e-3)
        return [y, mean, var, inv, *bn.backward(g, x, scale, mean, inv)]

    compiled = run()
    for name in ("_stats_nb", "_grad_sums_nb", "_affine_nb", "_affine2_nb"):
        monkeypatch.setattr(bn, name, None)
    for a, b in zip(compiled, run()):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_batch_norm_moments_keep_precision_far_from_zero():
    """One pass of shifted float64 sums: a large mean with a small spread does not cancel."""
    from tapeflow.kernels import batch_norm as bn

    rng = np.random.default_rng(11)
    x2 = (1000.0 + 0.01 * rng.standard_normal((20000, 3))).astype(np.float32)
    mean, var = bn.moments(x2)
    x64 = x2.astype(np.float64)
    np.testing.assert_allclose(mean, x64.mean(0), rtol=1e-14)
    np.testing.assert_allclose(var, x64.var(0), rtol=1e-9)


@pytest.mark.parametrize("rows", [65536, 65539])
def test_batch_norm_moments_of_thin_arrays_read_as_wider_rows(rows, monkeypatch):
    """A thin contiguous array (12 channels) is read 4 rows at a time as one row of 48 values
    (plus the rows left over): the same moments as float64 NumPy, split over cores or not."""
    from tapeflow.framework import threads
    from tapeflow.kernels import batch_norm as bn
    from tapeflow.kernels import parallel

    rng = np.random.default_rng(13)
    x2 = (100.0 + rng.standard_normal((rows, 12)) * np.arange(1, 13)).astype(np.float32)
    assert bn._row_group(x2, 12) == 4 and bn._row_group(x2[:, :11], 11) == 1
    x64 = x2.astype(np.float64)
    mean, var = bn.moments(x2)
    np.testing.assert_allclose(mean, x64.mean(0), rtol=1e-13)
    np.testing.assert_allclose(var, x64.var(0), rtol=1e-10)
    monkeypatch.setattr(threads, "_intra_op", 3)
    monkeypatch.setattr(parallel, "idle_core", lambda: True)
    split_mean, split_var = bn.moments(x2)
    np.testing.assert_allclose(split_mean, mean, rtol=1e-14)
    np.testing.assert_allclose(split_var, var, rtol=1e-12)


def test_batch_norm_kernels_split_over_cores_match_one_thread(monkeypatch):
    """Each core's slice of the rows gets its own partial sums (uneven slices of 7 rows)."""
    from tapeflow.framework import threads
    from tapeflow.kernels import batch_norm as bn
    from tapeflow.kernels import parallel

    rng = np.random.default_rng(12)
    x = rng.standard_normal((7, 5)) * 2 + 1
    g, scale, offset = rng.standard_normal((7, 5)), rng.standard_normal(5), rng.standard_normal(5)
    addend = rng.standard_normal((7, 9))[:, 2:7]

    def run():
        y, mean, var, inv = bn.forward(x, scale, offset, 1e-3, relu=True)
        return [y, mean, var, inv, *bn.backward(g, x, scale, mean, inv, relu_out=y,
                                                 addend=addend)]

    monkeypatch.setattr(threads, "_intra_op", 1)
    whole = run()
    monkeypatch.setattr(threads, "_intra_op", 3)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "idle_core", lambda: True)
    calls = []
    real_split = parallel.split
    monkeypatch.setattr(parallel, "split", lambda n, nbytes, work: calls.append(
        parallel.parts_for(n, nbytes)) or real_split(n, nbytes, work))
    for a, b in zip(whole, run()):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert calls == [3, 3, 3, 3]  # stats, normalize, gradient sums, gradient


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_compiled_matches_numpy_and_keeps_nan(monkeypatch, dtype):
    from tapeflow.kernels import activations

    rng = np.random.default_rng(8)
    out = np.maximum(rng.standard_normal((3, 4, 5)), 0).astype(dtype)
    g = rng.standard_normal((3, 4, 5)).astype(dtype)
    g[0, 0, :] = np.nan  # TF multiplies by the mask: NaN gradients stay NaN even where out <= 0
    g_t = g.transpose(1, 0, 2).copy().transpose(1, 0, 2)  # a non-contiguous gradient
    compiled = activations.relu_grad(g_t, out)
    monkeypatch.setattr(activations, "_relu_grad_nb", None)
    np.testing.assert_array_equal(compiled, activations.relu_grad(g_t, out))
    np.testing.assert_array_equal(compiled, g * (out > 0))
    assert compiled.dtype == dtype


@pytest.mark.parametrize("layout", ["contiguous", "fortran", "channel_slice"])
@pytest.mark.parametrize("shape", [(6, 4, 5, 3), (7, 3), (2, 3, 4), (3, 40, 30, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_add_grad_channel_sums_match_float64_sums(shape, layout, dtype):
    """Whole blocks of ROWS_PER_SUM rows and a partial last one, on every layout BiasAddGrad
    meets (a channel slice of a concatenation's gradient is read in place)."""
    from tapeflow.kernels import bias

    rng = np.random.default_rng(9)
    wide = (rng.standard_normal(shape[:-1] + (shape[-1] + 4,)) + 0.5).astype(dtype)
    g = {"contiguous": np.ascontiguousarray(wide[..., 2:-2]),
         "fortran": np.asfortranarray(wide[..., 2:-2]),
         "channel_slice": wide[..., 2:-2]}[layout]
    sums = bias.channel_sums(g)
    want = g.astype(np.float64).reshape(-1, shape[-1]).sum(0)
    assert sums.dtype == dtype and sums.shape == (shape[-1],)
    np.testing.assert_allclose(sums, want, rtol=2e-7 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("compiled", [True, False])
def test_dropout_mask_kernel_same_bits_as_the_numpy_formulation(monkeypatch, dtype, compiled):
    """The compiled mask pass draws the same raw bits and keeps the same entries (ties on the
    top byte settled by 32 more bits) as the NumPy passes it replaced, scale for scale."""
    from tapeflow.kernels import dropout as dropout_kernel
    from tapeflow.ops import nn_ops

    if not compiled:
        monkeypatch.setattr(dropout_kernel, "_mask_nb", None)
    like = np.ones((300, 77), dtype)  # ~90 ties on the top byte
    rate = 0.3

    def numpy_mask(gen):
        raw = gen.bit_generator.random_raw
        cut = min(round(rate * 2.0**40), 2**40 - 1)
        top, rest = cut >> 32, cut & 0xFFFFFFFF
        first = raw(-(-like.size // 8)).view(np.uint8)[:like.size]
        keep = first > top
        tied = np.flatnonzero(first == top)
        assert tied.size
        keep[tied] = raw(-(-tied.size // 2)).view(np.uint32)[:tied.size] >= rest
        work = like.dtype if like.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        mask = keep.reshape(like.shape).astype(work)
        mask *= work.type(1.0 / (1.0 - rate))
        return mask.astype(like.dtype)

    want = numpy_mask(np.random.Generator(np.random.PCG64(3)))
    got = nn_ops._dropout_mask.kernel(like, rate=rate, noise_shape=(-1, -1),
                                      gen=np.random.Generator(np.random.PCG64(3)))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
