"""tf.nn.conv3d / conv3d_transpose / max_pool3d / avg_pool3d (composites over depth taps of the
2-D ops): forward and input/filter gradients against PyTorch, float64 finite differences, eager
vs tf.function, and clear errors."""

import numpy as np
import pytest
import torch

import tapeflow as tf

RNG = np.random.default_rng(0)


def _t(x):  # NDHWC -> NCDHW
    return torch.tensor(x, requires_grad=True)


def _same_crop(full, sizes, strides, kernel, out):
    index = [slice(None)]
    for st, k, o in zip(strides, kernel, out):
        total = max((-(-o // st) - 1) * st + k - o, 0)
        index.append(slice(total // 2, total // 2 + o))
    return full[tuple(index)]


@pytest.mark.parametrize("strides,padding,dilations", [
    ((1, 1, 1), "VALID", (1, 1, 1)), ((2, 1, 2), "VALID", (1, 1, 1)),
    ((1, 1, 1), "SAME", (2, 1, 1))])
def test_conv3d_matches_torch(strides, padding, dilations):
    x = RNG.standard_normal((2, 5, 4, 5, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 2, 3, 4)).astype(np.float32)
    cot = None
    tx, tw = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch([tx, tw])
        y = tf.nn.conv3d(tx, tw, strides=[1, *strides, 1], padding=padding,
                         dilations=dilations)
        cot = RNG.standard_normal(y.shape).astype(np.float32)
        s = tf.reduce_sum(y * cot)
    gx, gw = tape.gradient(s, [tx, tw])
    px, pw = _t(x), _t(w)
    ref = torch.nn.functional.conv3d(px.permute(0, 4, 1, 2, 3), pw.permute(4, 3, 0, 1, 2),
                                     stride=strides, dilation=dilations,
                                     padding="same" if padding == "SAME" else 0)
    ref = ref.permute(0, 2, 3, 4, 1)
    (ref * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gx.numpy(), px.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw.numpy(), pw.grad.numpy(), rtol=1e-4, atol=1e-4)
    fn = tf.function(lambda a, b: tf.nn.conv3d(a, b, [1, *strides, 1], padding,
                                               dilations=dilations))
    np.testing.assert_allclose(fn(tx, tw).numpy(), y.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_matches_torch(kind, padding):
    x = RNG.standard_normal((2, 5, 6, 3, 2)).astype(np.float32)
    tx = tf.constant(x)
    op = tf.nn.max_pool3d if kind == "max" else tf.nn.avg_pool3d
    with tf.GradientTape() as tape:
        tape.watch(tx)
        y = op(tx, [2, 2, 2], [2, 2, 2], padding)
        cot = RNG.standard_normal(y.shape).astype(np.float32)
        s = tf.reduce_sum(y * cot)
    gx = tape.gradient(s, tx)
    px = _t(x)
    args = dict(kernel_size=2, stride=2, ceil_mode=padding == "SAME")
    if kind == "max":
        ref = torch.nn.functional.max_pool3d(px.permute(0, 4, 1, 2, 3), **args)
    else:
        ref = torch.nn.functional.avg_pool3d(px.permute(0, 4, 1, 2, 3),
                                             count_include_pad=False, **args)
    ref = ref.permute(0, 2, 3, 4, 1)
    (ref * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx.numpy(), px.grad.numpy(), rtol=1e-5, atol=1e-6)
    fn = tf.function(lambda a: op(a, [2, 2, 2], [2, 2, 2], padding))
    np.testing.assert_allclose(fn(tx).numpy(), y.numpy())


@pytest.mark.parametrize("strides,padding", [((2, 2, 2), "VALID"), ((2, 1, 2), "SAME")])
def test_conv3d_transpose_matches_torch(strides, padding):
    x = RNG.standard_normal((2, 3, 4, 3, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 2, 5, 2)).astype(np.float32)
    kernel = (3, 3, 2)
    if padding == "VALID":
        out = [(d - 1) * s + k for d, s, k in zip(x.shape[1:4], strides, kernel)]
    else:
        out = [d * s for d, s in zip(x.shape[1:4], strides)]
    tx, tw = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch([tx, tw])
        y = tf.nn.conv3d_transpose(tx, tw, [2, *out, 5], strides=[1, *strides, 1],
                                   padding=padding)
        cot = RNG.standard_normal(y.shape).astype(np.float32)
        s = tf.reduce_sum(y * cot)
    gx, gw = tape.gradient(s, [tx, tw])
    px, pw = _t(x), _t(w)
    full = torch.nn.functional.conv_transpose3d(px.permute(0, 4, 1, 2, 3),
                                                pw.permute(4, 3, 0, 1, 2), stride=strides)
    full = full.permute(0, 2, 3, 4, 1)
    ref = _same_crop(full, x.shape[1:4], strides, kernel, out) if padding == "SAME" else full
    (ref * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gx.numpy(), px.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw.numpy(), pw.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_float64_finite_differences():
    x = RNG.standard_normal((1, 4, 3, 3, 2))
    w = RNG.standard_normal((2, 2, 2, 2, 2))
    for fn in (lambda a, b: tf.nn.conv3d(a, b, [1, 2, 1, 1, 1], "SAME"),
               lambda a, b: tf.nn.conv3d_transpose(a, b, [1, 8, 3, 3, 2], [1, 2, 1, 1, 1],
                                                   "SAME"),
               lambda a, b: tf.nn.avg_pool3d(a * b[0, 0, 0, 0, 0], [3, 2, 2], [2, 1, 1],
                                             "SAME"),
               lambda a, b: tf.nn.max_pool3d(a * b[0, 0, 0, 0, 0], [3, 2, 2], [2, 1, 1],
                                             "SAME")):
        theoretical, numerical = tf.test.compute_gradient(fn, [x, w])
        for t, n in zip(theoretical, numerical):
            np.testing.assert_allclose(t, n, rtol=1e-5, atol=1e-6)


def test_clear_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Conv3D.*channels"):
        tf.nn.conv3d(np.zeros((1, 2, 2, 2, 3), np.float32), np.zeros((1, 1, 1, 2, 1), np.float32),
                     [1, 1, 1, 1, 1], "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="MaxPool3D.*depth, height"):
        tf.nn.max_pool3d(np.zeros((1, 2, 2, 2), np.float32), 2, 2, "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding"):
        tf.nn.avg_pool3d(np.zeros((1, 2, 2, 2, 1), np.float32), 2, 2, "FULL")
