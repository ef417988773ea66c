"""More tf.math: forward vs NumPy/SciPy, gradients vs finite differences, graph vs eager."""

import numpy as np
from scipy import special

import tapeflow as tf
from tapeflow.testing import OpCase, op_table_tests


def _in(lo, hi):
    return lambda rng: [rng.uniform(lo, hi, (3, 4))]


CASES = [
    OpCase("tan", tf.math.tan, np.tan, _in(-1, 1)),
    OpCase("asin", tf.math.asin, np.arcsin, _in(-0.9, 0.9)),
    OpCase("acos", tf.math.acos, np.arccos, _in(-0.9, 0.9)),
    OpCase("atan", tf.math.atan, np.arctan, _in(-3, 3)),
    OpCase("sinh", tf.math.sinh, np.sinh, _in(-2, 2)),
    OpCase("cosh", tf.math.cosh, np.cosh, _in(-2, 2)),
    OpCase("asinh", tf.math.asinh, np.arcsinh, _in(-2, 2)),
    OpCase("acosh", tf.math.acosh, np.arccosh, _in(1.5, 3)),
    OpCase("atanh", tf.math.atanh, np.arctanh, _in(-0.9, 0.9)),
    OpCase("expm1", tf.math.expm1, np.expm1, _in(-2, 2)),
    OpCase("erf", tf.math.erf, special.erf, _in(-2, 2)),
    OpCase("erfc", tf.math.erfc, special.erfc, _in(-2, 2)),
    OpCase("erfinv", tf.math.erfinv, special.erfinv, _in(-0.9, 0.9)),
    OpCase("ndtri", tf.math.ndtri, special.ndtri, _in(0.1, 0.9)),
    OpCase("lgamma", tf.math.lgamma, special.gammaln, _in(0.5, 4)),
    OpCase("digamma", tf.math.digamma, special.digamma, _in(0.5, 4)),
    OpCase("bessel_i0e", tf.math.bessel_i0e, special.i0e, _in(0.2, 3)),
    # tf.math.special: the forward is SciPy's; the gradients (TF's rules) are what is checked
    OpCase("bessel_j0", tf.math.special.bessel_j0, special.j0, _in(0.2, 6)),
    OpCase("bessel_j1", tf.math.special.bessel_j1, special.j1, _in(0.2, 6)),
    OpCase("bessel_y0", tf.math.special.bessel_y0, special.y0, _in(0.3, 6)),
    OpCase("bessel_y1", tf.math.special.bessel_y1, special.y1, _in(0.3, 6)),
    OpCase("bessel_k0", tf.math.special.bessel_k0, special.k0, _in(0.3, 4)),
    OpCase("bessel_k1", tf.math.special.bessel_k1, special.k1, _in(0.3, 4)),
    OpCase("bessel_k0e", tf.math.special.bessel_k0e, special.k0e, _in(0.3, 4)),
    OpCase("bessel_k1e", tf.math.special.bessel_k1e, special.k1e, _in(0.3, 4)),
    OpCase("dawsn", tf.math.special.dawsn, special.dawsn, _in(-3, 3)),
    OpCase("expint", tf.math.special.expint, special.expi, _in(0.2, 3)),
    OpCase("fresnel_cos", tf.math.special.fresnel_cos, lambda x: special.fresnel(x)[1],
           _in(-2, 2)),
    OpCase("fresnel_sin", tf.math.special.fresnel_sin, lambda x: special.fresnel(x)[0],
           _in(-2, 2)),
    OpCase("spence", tf.math.special.spence, special.spence, _in(0.2, 3)),
    OpCase("atan2", tf.math.atan2, np.arctan2, lambda rng: [rng.uniform(-2, 2, (3, 4)),
                                                            rng.uniform(0.5, 2, (4,))]),
    OpCase("xlogy", tf.math.xlogy, special.xlogy,
           lambda rng: [rng.uniform(0.1, 1, (3, 4)), rng.uniform(0.5, 2, (3, 4))]),
    OpCase("log_sigmoid", tf.math.log_sigmoid, lambda x: -np.logaddexp(0, -x), _in(-3, 3)),
]

test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = op_table_tests(CASES)


def test_counting_ops():
    assert int(tf.math.count_nonzero([[0, 1], [2, 0]])) == 2
    assert tf.math.bincount([1, 1, 3]).numpy().tolist() == [0, 2, 0, 1]
    np.testing.assert_allclose(tf.math.bincount([0, 2], weights=[0.5, 2.0]).numpy(), [0.5, 0, 2])
    cm = tf.math.confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], num_classes=3).numpy()
    assert cm.tolist() == [[1, 0, 0], [0, 1, 1], [0, 0, 1]]
    top = tf.math.in_top_k([1, 0], tf.constant([[0.1, 0.9, 0.5], [0.2, 0.3, 0.4]]), 1)
    assert top.numpy().tolist() == [True, False]
    assert float(tf.math.polyval([1.0, 2.0, 3.0], 2.0)) == 11.0
    assert bool(tf.math.is_non_decreasing([1, 1, 2])) and not bool(
        tf.math.is_strictly_increasing([1, 1, 2]))
    assert tf.math.xlogy([0.0, 1.0], [0.0, np.e]).numpy().tolist() == [0.0, 1.0]
    np.testing.assert_allclose(tf.math.xdivy([0.0, 2.0], [0.0, 4.0]).numpy(), [0.0, 0.5])
    np.testing.assert_allclose(tf.math.multiply_no_nan([np.inf, 2.0], [0.0, 3.0]).numpy(),
                               [0.0, 6.0])


def test_special_gradients_at_their_limits():
    x = tf.constant([0.0, 1.0, 2.0], tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        j1, sp = tf.math.special.bessel_j1(x), tf.math.special.spence(x)
    # J1'(0) = 1/2 and spence'(1) = -1: the limits TF's rules take where x / (1 - x) is 0/0
    np.testing.assert_allclose(tape.gradient(j1, x).numpy(),
                               [0.5, special.j0(1.0) - special.j1(1.0), special.j0(2.0)
                                - special.j1(2.0) / 2.0], rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(sp, x).numpy()[1:], [-1.0, np.log(2.0) / -1.0])
    assert tf.math.special.dawsn(tf.constant([0.5], tf.float32)).dtype == tf.float32


def _second_derivative(fn, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = fn(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x).numpy()


def test_bessel_i0e_second_derivative_matches_finite_differences():
    # its gradient calls I1e, whose own gradient was missing before the two definitions of the
    # pair were merged: the second derivative silently lacked the I1e' term
    x = tf.constant([-1.2, 0.5, 1.5, 4.0], tf.float64)
    d2y = _second_derivative(tf.math.bessel_i0e, x)
    h, xs = 1e-4, x.numpy()
    expected = (special.i0e(xs + h) - 2 * special.i0e(xs) + special.i0e(xs - h)) / h**2
    np.testing.assert_allclose(d2y, expected, rtol=1e-5, atol=1e-7)


def test_digamma_second_derivative_and_polygamma_of_a_python_order():
    # digamma's gradient is polygamma(1, x), which now has its own gradient (polygamma(2, x));
    # before, the second derivative came back None
    x = tf.constant([0.5, 1.5, 3.0], tf.float64)
    np.testing.assert_allclose(_second_derivative(tf.math.digamma, x),
                               special.polygamma(2, x.numpy()), rtol=1e-12)
    # a Python order beside a float64 tensor takes the tensor's dtype, as in TensorFlow
    out = tf.math.polygamma(2.0, x)
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out.numpy(), special.polygamma(2, x.numpy()), rtol=1e-12)
