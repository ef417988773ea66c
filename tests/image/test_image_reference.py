"""tf.image against TensorFlow 2.21's numbers (reference/image_values.npz, made by
reference/make_image_values.py): every deterministic function, eagerly and traced."""

from __future__ import annotations

import os

import numpy as np
import pytest
from image_cases import INPUTS, image_cases

import tapeflow as tf

REF = np.load(os.path.join(os.path.dirname(__file__), "reference", "image_values.npz"),
              allow_pickle=False)
CASES = image_cases(tf, {**{name: REF[name] for name in INPUTS}, "hsv": REF["rgb_to_hsv"]})
# integer outputs must be equal; float ones agree to float32 rounding (TF's fused kernels and
# its BLAS sum in another order; the hue of a pixel shifts one ulp across a wrap)
TOLERANCE = {"total_variation": 2e-5, "total_variation_3d": 2e-5, "ssim": 2e-6,
             "ssim_multiscale": 2e-6, "ssim_small_filter": 2e-6, "psnr": 5e-6, "psnr_u8": 5e-6}


def test_every_recorded_case_is_checked():
    recorded = set(REF.files) - set(INPUTS)
    assert recorded == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    want = REF[name]
    got = CASES[name]().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE.get(name, 1e-6))


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_gives_the_eager_numbers(name):
    eager = CASES[name]().numpy()
    traced = tf.function(CASES[name])().numpy()
    np.testing.assert_array_equal(traced, eager)
