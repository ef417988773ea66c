"""tf.quantization: fake quantization and quantize-then-dequantize against NumPy formulas
written here, TF 2.21's values for one case each (recorded from TensorFlow), straight-through
gradients, and eager == traced."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

X = np.array([-7.0, -1.3, -0.04, 0.0, 0.26, 1.1, 2.69, 3.0], np.float32)


def _grid(lo, hi, bits, narrow):
    """The nudged levels of [lo, hi] by the definition: 2**bits (or one fewer) evenly spaced
    levels of the same width with 0.0 exactly one of them."""
    q_min, q_max = (1 if narrow else 0), 2 ** bits - 1
    scale = (hi - lo) / (q_max - q_min)
    zero = min(max(round(q_min - lo / scale), q_min), q_max)
    return (np.arange(q_min, q_max + 1) - zero) * scale


@pytest.mark.parametrize("lo,hi,bits,narrow", [(-6.0, 6.0, 8, False), (-1.3, 2.7, 4, True),
                                               (0.2, 3.1, 8, False), (-5.5, -0.5, 3, False)])
def test_fake_quant_snaps_to_the_nearest_nudged_level(lo, hi, bits, narrow):
    x = np.random.default_rng(0).normal(scale=4.0, size=200).astype(np.float32)
    levels = _grid(lo, hi, bits, narrow)
    want = levels[np.abs(x[:, None] - levels[None, :]).argmin(axis=1)]
    got = tf.quantization.fake_quant_with_min_max_args(x, lo, hi, bits, narrow).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5 * (hi - lo))
    assert 0.0 in levels or lo > 0 or hi < 0
    if lo <= 0 <= hi:
        assert tf.quantization.fake_quant_with_min_max_args([0.0], lo, hi, bits,
                                                            narrow).numpy()[0] == 0.0
    as_vars = tf.quantization.fake_quant_with_min_max_vars(x, lo, hi, bits, narrow).numpy()
    np.testing.assert_array_equal(as_vars, got)


def test_tf_values_and_straight_through_gradients():
    # TensorFlow 2.21: fake_quant_with_min_max_args(X, -1.3, 2.7, num_bits=4, narrow_range=True)
    tf_values = [-1.4285714626312256, -1.4285714626312256, 0.0, 0.0, 0.2857142984867096,
                 1.1428571939468384, 2.5714287757873535, 2.5714287757873535]
    x, lo, hi = tf.constant(X), tf.Variable(-1.3), tf.Variable(2.7)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.quantization.fake_quant_with_min_max_args(x, -1.3, 2.7, 4, True)
        z = tf.quantization.fake_quant_with_min_max_vars(x, lo, hi, 4, True)
        weights = tf.range(1.0, 9.0)
        loss = tf.reduce_sum(z * weights)
    np.testing.assert_allclose(y.numpy(), tf_values, rtol=1e-6)
    # TensorFlow 2.21's gradients of loss: inside the nudged range [-1.43, 2.57] the weights
    # pass through; below it they go to min, above it to max
    grads = tape.gradient(loss, [x, lo, hi])
    np.testing.assert_array_equal(grads[0].numpy(), [0, 2, 3, 4, 5, 6, 0, 0])
    assert float(grads[1]) == 1.0 and float(grads[2]) == 15.0
    g = tf.quantization.fake_quant_with_min_max_args_gradient(weights, x, -1.3, 2.7, 4, True)
    np.testing.assert_array_equal(g.numpy(), [0, 2, 3, 4, 5, 6, 0, 0])
    dx, dlo, dhi = tf.quantization.fake_quant_with_min_max_vars_gradient(weights, x, -1.3, 2.7,
                                                                         4, True)
    assert dx.numpy().tolist() == [0, 2, 3, 4, 5, 6, 0, 0] and (float(dlo), float(dhi)) == (
        1.0, 15.0)


def test_per_channel_ranges_and_gradients_match_each_channel_alone():
    rng = np.random.default_rng(1)
    x = rng.normal(scale=3.0, size=(5, 4, 3)).astype(np.float32)
    lo, hi = np.array([-1.0, -4.0, 0.5], np.float32), np.array([1.0, 2.0, 6.0], np.float32)
    cot = rng.normal(size=x.shape).astype(np.float32)
    xs, los, his = tf.constant(x), tf.constant(lo), tf.constant(hi)
    with tf.GradientTape() as tape:
        tape.watch([xs, los, his])
        y = tf.quantization.fake_quant_with_min_max_vars_per_channel(xs, los, his, 6)
        loss = tf.reduce_sum(y * cot)
    dx, dlo, dhi = tape.gradient(loss, [xs, los, his])
    for c in range(3):
        xc, lc, hc = tf.constant(x[..., c]), tf.constant(lo[c]), tf.constant(hi[c])
        with tf.GradientTape() as tape:
            tape.watch([xc, lc, hc])
            yc = tf.quantization.fake_quant_with_min_max_vars(xc, lc, hc, 6)
            lc_loss = tf.reduce_sum(yc * cot[..., c])
        gx, gl, gh = tape.gradient(lc_loss, [xc, lc, hc])
        np.testing.assert_array_equal(y.numpy()[..., c], yc.numpy())
        np.testing.assert_array_equal(dx.numpy()[..., c], gx.numpy())
        np.testing.assert_allclose([dlo.numpy()[c], dhi.numpy()[c]], [float(gl), float(gh)],
                                   rtol=1e-6)


def _qdq_reference(x, lo, hi, bits, signed, narrow, range_given):
    """TF's documented rule: the side of the range needing the finer grid sets the scale."""
    if not range_given:
        lo, hi = float(x.min()), float(x.max())
    q_min = -(2 ** (bits - 1)) + (1 if narrow else 0) if signed else 0
    q_max = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    from_min = q_min / lo if q_min * lo > 0 else np.inf
    from_max = q_max / hi if q_max * hi > 0 else np.inf
    if from_min < from_max:
        scale, step = from_min, lo / q_min
        hi = q_max * step
    else:
        scale, step = from_max, hi / q_max
        lo = q_min * step
    v = np.clip(x.astype(np.float64), lo, hi) if range_given else x.astype(np.float64)
    return np.round(v * scale) * step


@pytest.mark.parametrize("signed,narrow,range_given", [(True, False, True), (True, True, True),
                                                       (False, False, True),
                                                       (True, False, False)])
def test_quantize_and_dequantize_v2_matches_the_rule(signed, narrow, range_given):
    x = np.random.default_rng(2).normal(scale=2.0, size=300).astype(np.float32)
    got = tf.quantization.quantize_and_dequantize_v2(
        x, -1.0, 2.0, signed_input=signed, num_bits=4, range_given=range_given,
        narrow_range=narrow).numpy()
    want = _qdq_reference(x, -1.0, 2.0, 4, signed, narrow, range_given)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # TensorFlow 2.21, X with [-1, 2] given, 4 bits signed:
    np.testing.assert_allclose(
        tf.quantization.quantize_and_dequantize_v2(X, -1.0, 2.0, num_bits=4,
                                                   range_given=True).numpy(),
        [-2.2857143878936768, -1.4285714626312256, 0.0, 0.0, 0.2857142984867096,
         1.1428571939468384, 2.0, 2.0], rtol=1e-6)


def test_quantize_and_dequantize_per_axis_and_both_gradients():
    x = np.random.default_rng(3).normal(size=(6, 3)).astype(np.float32)
    per_axis = tf.quantization.quantize_and_dequantize_v2(x, [0.0] * 3, [0.0] * 3, num_bits=5,
                                                          axis=1).numpy()
    for c in range(3):
        np.testing.assert_allclose(per_axis[:, c], _qdq_reference(x[:, c], 0, 0, 5, True,
                                                                   False, False), rtol=1e-6)
    xs = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        v2 = tf.quantization.quantize_and_dequantize_v2(xs, -0.5, 0.5, range_given=True)
        v1 = tf.quantization.quantize_and_dequantize(xs, -0.5, 0.5, range_given=True)
    inside = ((x >= -0.5) & (x <= 0.5)).astype(np.float32)
    np.testing.assert_array_equal(tape.gradient(v2, xs).numpy(), inside)
    np.testing.assert_array_equal(tape.gradient(v1, xs).numpy(), np.ones_like(x))
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())


def test_traced_equals_eager():
    x = np.random.default_rng(4).normal(scale=3.0, size=(4, 3)).astype(np.float32)

    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = (tf.quantization.fake_quant_with_min_max_args(x, -2.0, 2.0, 5)
                 + tf.quantization.fake_quant_with_min_max_vars_per_channel(
                     x, tf.constant([-1.0, -2.0, -3.0]), tf.constant([1.0, 2.0, 3.0]))
                 + tf.quantization.quantize_and_dequantize_v2(x, -1.0, 1.0, range_given=True))
            loss = tf.reduce_sum(y * y)
        return y, tape.gradient(loss, x)

    for e, t in zip(run(tf.constant(x)), tf.function(run)(tf.constant(x))):
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_bad_arguments_name_the_op_and_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match="FakeQuantWithMinMaxArgs.*min"):
        tf.quantization.fake_quant_with_min_max_args(X, 2.0, 1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_bits"):
        tf.quantization.fake_quant_with_min_max_args(X, num_bits=17)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"PerChannel.*\[3\].*\(5,\)|"
                                                             r"PerChannel.*min must be"):
        tf.quantization.fake_quant_with_min_max_vars_per_channel(
            np.zeros((2, 3), np.float32), np.zeros(5, np.float32), np.ones(5, np.float32))
    with pytest.raises(TypeError, match="float32"):
        tf.quantization.fake_quant_with_min_max_args(np.zeros(3, np.float64))
    with pytest.raises(ValueError, match="round_mode"):
        tf.quantization.quantize_and_dequantize_v2(X, -1.0, 1.0, round_mode="UP")
