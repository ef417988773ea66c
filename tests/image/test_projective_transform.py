"""ImageProjectiveTransformV3 (tf.raw_ops) against values recorded from TensorFlow 2.21 for
every fill mode and interpolation (reference/make_projective_values.py), its gradient against
float64 finite differences (the exact adjoint), eager vs tf.function, and clear errors."""

import importlib.util
import os

import numpy as np
import pytest

import tapeflow as tf

_spec = importlib.util.spec_from_file_location(
    "make_projective_values", os.path.join(os.path.dirname(__file__), "reference",
                                           "make_projective_values.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
REF = np.load(ref.PATH)


@pytest.mark.parametrize("name", sorted(ref.CASES))
def test_matches_tensorflow(name):
    out = ref.run_case(tf, name)
    expected = REF[name]
    assert out.dtype.name == expected.dtype.name and out.shape == expected.shape
    if expected.dtype == np.uint8:  # bilinear values truncated to integers: allow 1 off
        assert np.abs(out.numpy().astype(int) - expected.astype(int)).max() <= 1
    else:
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_traced_equals_eager():
    name = "projective_reflect_bilinear"
    fn = tf.function(lambda: ref.run_case(tf, name))
    np.testing.assert_allclose(fn().numpy(), ref.run_case(tf, name).numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode,interp", [("REFLECT", "BILINEAR"), ("CONSTANT", "BILINEAR"),
                                         ("WRAP", "NEAREST")])
def test_gradient_is_the_adjoint(mode, interp):
    images = np.random.default_rng(3).standard_normal((2, 4, 5, 2))
    transforms = np.array([[1.1, 0.2, 0.3, -0.1, 0.9, 0.4, 0.05, -0.08],
                           [0.8, -0.3, 1.0, 0.3, 1.2, -0.5, -0.02, 0.03]], np.float32)

    def fn(x):
        return tf.raw_ops.ImageProjectiveTransformV3(
            images=x, transforms=transforms, output_shape=[3, 6], fill_value=0.5,
            interpolation=interp, fill_mode=mode)

    theoretical, numerical = tf.test.compute_gradient(fn, [images])
    np.testing.assert_allclose(theoretical[0], numerical[0], rtol=1e-6, atol=1e-6)
    # and the gradient's own gradient (the op is linear: it is the transform again)
    g = np.random.default_rng(4).standard_normal((2, 3, 6, 2))
    x = tf.constant(images)
    with tf.GradientTape() as outer:
        gt = tf.constant(g)
        outer.watch(gt)
        with tf.GradientTape() as inner:
            inner.watch(x)
            s = tf.reduce_sum(fn(x) * gt)
        dx = inner.gradient(s, x)
        r = tf.reduce_sum(dx * tf.constant(images))
    np.testing.assert_allclose(outer.gradient(r, gt).numpy(),
                               fn(x).numpy() - fn(tf.zeros_like(x)).numpy(), atol=1e-12)


def test_clear_errors():
    images = np.zeros((1, 3, 3, 1), np.float32)
    call = tf.raw_ops.ImageProjectiveTransformV3
    with pytest.raises(tf.errors.InvalidArgumentError, match="fill_mode"):
        call(images=images, transforms=np.zeros((1, 8), np.float32), output_shape=[3, 3],
             fill_value=0.0, interpolation="BILINEAR", fill_mode="MIRROR")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"transforms must be \[1 or batch"):
        call(images=images, transforms=np.zeros((1, 6), np.float32), output_shape=[3, 3],
             fill_value=0.0, interpolation="BILINEAR")
    with pytest.raises(tf.errors.InvalidArgumentError, match="output_shape"):
        call(images=images, transforms=np.zeros((1, 8), np.float32), output_shape=[3],
             fill_value=0.0, interpolation="NEAREST")
