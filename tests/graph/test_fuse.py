"""The fusion pass and its fused primitives: same numbers as the unfused chains, eager and graph,
first and second order, and no fusion where an intermediate has another reader."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes import fuse
from tapeflow.graph.verify import verify
from tapeflow.kernels import batch_norm as bn_kernels
from tapeflow.kernels import bias as bias_kernels
from tapeflow.ops import conv_ops, fused_ops, nn_ops, normalization_ops
from tapeflow.testing import check_grads

rng = np.random.default_rng(0)
CONV = dict(strides=(1, 1), dilations=(1, 1), padding="SAME")


def _ops(fn, *args) -> list[str]:
    return [n.op.name for n in fn.get_concrete_function(*args).graph.nodes]


def _conv_block(x, w, b, scale, offset):
    y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b))
    z, _, _ = tf.compat.v1.nn.fused_batch_norm(y, scale, offset, is_training=True)
    return tf.nn.relu(z)


def _block_inputs(dtype=np.float32):
    return [tf.constant(rng.standard_normal(s).astype(dtype))
            for s in ((2, 5, 5, 3), (3, 3, 3, 4), (4,), (4,), (4,))]


def test_training_step_fuses_every_chain_and_matches_eager():
    args = _block_inputs()

    def step(x, w, b, scale, offset):
        with tf.GradientTape() as tape:
            tape.watch([x, w, b, scale, offset])
            y = _conv_block(x, w, b, scale, offset)
            loss = tf.reduce_sum(y * y) + tf.reduce_sum(x * x)  # two paths into dx
        return loss, tape.gradient(loss, [x, w, b, scale, offset])

    graph_step = tf.function(step)
    eager_loss, eager_grads = step(*args)
    loss, grads = graph_step(*args)
    np.testing.assert_allclose(loss.numpy(), eager_loss.numpy(), rtol=1e-5)
    for g, e in zip(grads, eager_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)
    names = _ops(graph_step, *args)
    assert {"_FusedConv2D", "_FusedBatchNormEx", "_FusedBatchNormGradEx"} <= set(names)
    assert "BiasAdd" not in names and "Relu" not in names
    concrete = graph_step.get_concrete_function(*args)
    verify(concrete.graph)
    assert "fuse: fused" in concrete.optimization_report()
    grads_ex = [n for n in concrete.graph.nodes if n.op.name == "_FusedBatchNormGradEx"]
    assert [n.attrs["mask_from"] for n in grads_ex] == ["coefficients"]  # y is not read


def test_fused_conv_takes_relu_and_bias_in_one_node():
    x, w, b = _block_inputs()[:3]
    f = tf.function(lambda x, w, b: tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)))
    node = next(n for n in f.get_concrete_function(x, w, b).graph.nodes
                if n.op.name == "_FusedConv2D")
    assert node.attrs["activation"] == "Relu"
    expected = np.maximum(tf.nn.conv2d(x, w, 1, "SAME").numpy() + b.numpy(), 0)
    np.testing.assert_allclose(f(x, w, b).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_no_fusion_when_the_intermediate_has_another_reader():
    x, w, b = _block_inputs()[:3]

    @tf.function
    def f(x, w, b):
        conv = tf.nn.conv2d(x, w, 1, "SAME")
        return tf.nn.relu(tf.nn.bias_add(conv, b)), conv  # conv is also an output

    names = _ops(f, x, w, b)
    assert "Conv2D" in names and "_FusedConv2D" not in names
    y, conv = f(x, w, b)
    np.testing.assert_allclose(y.numpy(), np.maximum(conv.numpy() + b.numpy(), 0), rtol=1e-6)


def test_nchw_bias_add_is_left_alone():
    x = tf.constant(rng.standard_normal((1, 4, 3, 3)).astype(np.float32))
    f = tf.function(lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"))
    assert "_FusedConv2D" not in _ops(f, x, tf.zeros([4]))


def test_traced_forward_differentiated_by_an_eager_tape():
    """A tf.function's optimized (fused) graph is what an outer tape differentiates."""
    args = _block_inputs()
    forward = tf.function(_conv_block)
    assert "_FusedBatchNormEx" in _ops(forward, *args)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(args)
        graph_loss = tf.reduce_sum(forward(*args) ** 2)
        eager_loss = tf.reduce_sum(_conv_block(*args) ** 2)
    for g, e in zip(tape.gradient(graph_loss, args), tape.gradient(eager_loss, args)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("activation", [None, "Relu"])
def test_fused_conv_gradients_match_finite_differences(activation):
    x, w, b = (a.numpy() for a in _block_inputs(np.float64)[:3])
    check_grads(lambda x, w, b: apply(fused_ops._fused_conv2d, x, w, b, activation=activation,
                                      **CONV), [x, w, b], order=2)


@pytest.mark.parametrize("activation", [None, "Relu"])
def test_fused_batch_norm_gradients_match_finite_differences(activation):
    x = rng.standard_normal((3, 2, 2, 4))
    scale, offset = rng.standard_normal(4), rng.standard_normal(4)

    def f(x, scale, offset):
        return apply(fused_ops._fused_batch_norm_ex, x, scale, offset, epsilon=1e-3,
                     activation=activation)[0]

    check_grads(f, [x, scale, offset], order=2, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("mask_from", ["output", "coefficients"])
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("addend_columns", [slice(None), slice(0, 5), slice(2, 7)])
def test_fused_batch_norm_grad_equals_relu_grad_then_batch_norm_grad(compiled, addend_columns,
                                                                      mask_from, monkeypatch):
    if not compiled:  # the NumPy fallback used when numba is missing
        for name in ("_grad_sums_nb", "_affine_nb", "_affine2_nb"):
            monkeypatch.setattr(bn_kernels, name, None)
    x = rng.standard_normal((4, 3, 3, 5))
    scale, offset = rng.standard_normal(5), rng.standard_normal(5)
    g = rng.standard_normal(x.shape)
    wide = rng.standard_normal((4, 3, 3, 5 if addend_columns == slice(None) else 8))
    addend = wide[..., addend_columns]  # a channel slice, as SplitLike makes, read in place
    g[0, 0, 0, :] = np.nan  # NaN gradients stay NaN where the ReLU is off, as ReluGrad
    y, mean, _, inv, ab = apply(fused_ops._fused_batch_norm_ex, x, scale, offset, epsilon=1e-3,
                                activation="Relu")
    masked = apply(nn_ops._relu_grad, g, y)
    ref = apply(normalization_ops._fused_batch_norm_grad, masked, x, scale, mean, inv)
    got = apply(fused_ops._fused_batch_norm_grad_ex, g, y if mask_from == "output" else ab, x,
                scale, mean, inv, addend, mask_from=mask_from)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy() + addend, rtol=1e-10)
    for a, r in zip(got[1:], ref[1:]):
        np.testing.assert_allclose(a.numpy(), r.numpy(), rtol=1e-10)
    summed = apply(fused_ops._fused_batch_norm_grad_ex, g, y if mask_from == "output" else ab,
                   x, scale, mean, inv, addend, mask_from=mask_from, dx_sums=True)
    for a, b in zip(summed[:3], got):  # the sums change nothing else
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(summed[3].numpy(), np.sum(got[0].numpy(), axis=(0, 1, 2)),
                               rtol=1e-12)
    np.testing.assert_allclose(y.numpy(), np.maximum(apply(
        normalization_ops._fused_batch_norm, x, scale, offset, epsilon=1e-3)[0].numpy(), 0),
        rtol=1e-12)


@pytest.mark.parametrize("compiled", [True, False])
def test_relu_mask_from_coefficients_is_the_outputs_mask_bit_for_bit(compiled, monkeypatch):
    """float32 values crowded around the ReLU's kink: x*a + b > 0 recomputed in the gradient
    marks exactly the entries the forward pass left positive (ties at 0 included)."""
    if not compiled:
        for name in ("_grad_sums_nb", "_affine_nb", "_affine2_nb"):
            monkeypatch.setattr(bn_kernels, name, None)
    r = np.random.default_rng(3)
    x = (r.standard_normal((64, 50, 7)) * 1e-3 + 0.5).astype(np.float32)  # mean ~ 0.5
    scale, offset = r.standard_normal(7).astype(np.float32), np.zeros(7, np.float32)
    y, mean, _, inv, ab = bn_kernels.forward(x, scale, offset, 1e-3, relu=True,
                                             coefficients=True)
    g = np.ones_like(x)
    from_y = bn_kernels.backward(g, x, scale, mean, inv, relu_out=y, addend=np.zeros_like(x))
    from_ab = bn_kernels.backward(g, x, scale, mean, inv, relu_coefficients=ab,
                                  addend=np.zeros_like(x))
    assert 0.3 < (y > 0).mean() < 0.7
    for a, b in zip(from_y, from_ab):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("compiled", [True, False])
def test_dx_sums_over_many_blocks_of_rows(compiled, monkeypatch):
    """float32 dx of 4096 rows (64 blocks of partial sums, the rows split over the cores where
    they are idle): the sums are float64 sums of dx to float32 accuracy, the same bits twice."""
    if not compiled:
        for name in ("_grad_sums_nb", "_affine_nb", "_affine2_nb"):
            monkeypatch.setattr(bn_kernels, name, None)
    r = np.random.default_rng(4)
    x = r.standard_normal((16, 16, 16, 20)).astype(np.float32)
    wide = r.standard_normal((16, 16, 16, 28)).astype(np.float32)
    scale, offset = r.standard_normal(20).astype(np.float32), np.zeros(20, np.float32)
    _, mean, _, inv, ab = bn_kernels.forward(x, scale, offset, 1e-3, relu=True,
                                             coefficients=True)
    g = r.standard_normal(x.shape).astype(np.float32)
    out = bn_kernels.backward(g, x, scale, mean, inv, relu_coefficients=ab,
                              addend=wide[..., 3:23], dx_sums=True)
    again = bn_kernels.backward(g, x, scale, mean, inv, relu_coefficients=ab,
                                addend=wide[..., 3:23], dx_sums=True)
    dx = out[0].astype(np.float64).reshape(-1, 20)
    assert out[3].dtype == np.float32
    np.testing.assert_allclose(out[3], dx.sum(axis=0), rtol=1e-5,
                               atol=1e-6 * np.abs(dx).sum(axis=0).max())
    for a, b in zip(out, again):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mask_from", ["output", "coefficients"])
@pytest.mark.parametrize("compiled", [True, False])
def test_pooled_gradient_is_the_average_pool_gradient_read_in_place(compiled, mask_from,
                                                                     monkeypatch):
    """g given as AvgPoolGrad's input (2x2 windows tiling x): the same bits as with
    AvgPoolGrad's output, the addend and dx's sums included, over 1024 rows (16 blocks)."""
    if not compiled:
        for name in ("_grad_sums_nb", "_affine_nb", "_affine2_nb"):
            monkeypatch.setattr(bn_kernels, name, None)
    r = np.random.default_rng(8)
    x = r.standard_normal((4, 16, 16, 6)).astype(np.float32)
    scale, offset = r.standard_normal(6).astype(np.float32), np.zeros(6, np.float32)
    y, mean, _, inv, ab = bn_kernels.forward(x, scale, offset, 1e-3, relu=True,
                                             coefficients=True)
    dp = r.standard_normal((4, 8, 8, 6)).astype(np.float32)
    addend = r.standard_normal((4, 16, 16, 9)).astype(np.float32)[..., 2:8]
    g = apply(conv_ops._avg_pool_grad, dp, input_hw=(16, 16), ksize=(2, 2), strides=(2, 2),
              padding="VALID").numpy()
    mask = {"relu_out": y} if mask_from == "output" else {"relu_coefficients": ab}
    want = bn_kernels.backward(g, x, scale, mean, inv, addend=addend, dx_sums=True, **mask)
    got = bn_kernels.backward(dp, x, scale, mean, inv, addend=addend, dx_sums=True,
                              pooled=(2, 2), **mask)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    op_got = apply(fused_ops._fused_batch_norm_grad_ex, dp, y if mask_from == "output" else ab,
                   x, scale, mean, inv, addend, mask_from=mask_from, pooled=(2, 2))
    np.testing.assert_array_equal(op_got[0].numpy(), want[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not that of a 2x2 average pool"):
        apply(fused_ops._fused_batch_norm_grad_ex, g, ab, x, scale, mean, inv,
              mask_from="coefficients", pooled=(2, 2))


@pytest.mark.parametrize("pool,fused", [((2, 2, "VALID"), True), ((3, 2, "VALID"), False),
                                        ((2, 2, "SAME"), False), ((2, 1, "VALID"), False)])
def test_average_pool_gradient_folds_into_the_batch_norm_gradient(pool, fused):
    """A transition (batch norm, ReLU, 2x2 average pool) in a training step: AvgPoolGrad folds
    where its windows tile x, and the step computes what eager execution does."""
    k, stride, padding = pool
    x = tf.constant(rng.standard_normal((2, 8, 8, 4)).astype(np.float32))
    scale, offset = tf.constant(np.ones(4, np.float32)), tf.constant(np.zeros(4, np.float32))

    def step(x, scale, offset):
        with tf.GradientTape() as tape:
            tape.watch([x, scale, offset])
            z, _, _ = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, is_training=True)
            p = tf.nn.avg_pool2d(tf.nn.relu(z), k, stride, padding)
            loss = tf.reduce_sum(p * p * p)
        return tape.gradient(loss, [x, scale, offset])

    graph_step = tf.function(step)
    names = _ops(graph_step, x, scale, offset)
    assert ("AvgPoolGrad" not in names) == fused
    for got, want in zip(graph_step(x, scale, offset), step(x, scale, offset)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_fused_batch_norm_grad_rejects_a_mask_of_the_wrong_shape():
    x = tf.constant(rng.standard_normal((4, 3)))
    c = tf.ones([3], tf.float64)
    with pytest.raises(ValueError, match=r"'coefficients' needs a mask of shape \[2, 3\], got"):
        apply(fused_ops._fused_batch_norm_grad_ex, x, x, x, c, c, c, mask_from="coefficients")


@pytest.mark.parametrize("compiled", [True, False])
def test_add_bias_inplace(compiled, monkeypatch):
    if not compiled:
        monkeypatch.setattr(bias_kernels, "_add_bias_nb", None)
    y = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y[0, 0, 0] = np.nan
    b = rng.standard_normal(4).astype(np.float32)
    expected = np.maximum(y + b, 0)
    out = bias_kernels.add_bias_inplace(y, b, relu=True)
    assert out is y
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert np.isnan(out[0, 0, 0])


def test_fused_ops_report_bad_arguments():
    x, w = np.zeros((1, 3, 3, 2)), np.zeros((1, 1, 2, 4))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bias must be a vector of the 4"):
        apply(fused_ops._fused_conv2d, x, w, np.zeros(3), activation=None, **CONV)
    with pytest.raises(tf.errors.InvalidArgumentError, match="activation must be one of"):
        apply(fused_ops._fused_conv2d, x, w, np.zeros(4), activation="Gelu", **CONV)


def test_report_counts_fused_chains():
    x, w, b = _block_inputs()[:3]
    f = tf.function(lambda x, w, b: tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)))
    graph = f.get_concrete_function(x, w, b).traced_graph
    _, report = fuse.run(graph)
    assert report == "fuse: fused 2 chains (_FusedConv2D x2)"
