"""tf.image against TensorFlow 2.21's numbers (reference/image_values.npz, made by
reference/make_image_values.py): every deterministic function, eagerly and traced."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf

REF = np.load(os.path.join(os.path.dirname(__file__), "reference", "image_values.npz"),
              allow_pickle=False)
img, img_u8, other = REF["img"], REF["img_u8"], REF["other"]
big, big2, boxes, box_indices = REF["big"], REF["big2"], REF["boxes"], REF["box_indices"]
hsv = REF["rgb_to_hsv"]
ops = tf.image

CASES = {
    "rgb_to_hsv": lambda: ops.rgb_to_hsv(img),
    "hsv_to_rgb": lambda: ops.hsv_to_rgb(hsv),
    "rgb_to_yiq": lambda: ops.rgb_to_yiq(img),
    "yiq_to_rgb": lambda: ops.yiq_to_rgb(img),
    "rgb_to_yuv": lambda: ops.rgb_to_yuv(img),
    "yuv_to_rgb": lambda: ops.yuv_to_rgb(img),
    "rgb_to_grayscale": lambda: ops.rgb_to_grayscale(img),
    "rgb_to_grayscale_u8": lambda: ops.rgb_to_grayscale(img_u8),
    "grayscale_to_rgb": lambda: ops.grayscale_to_rgb(img[..., :1]),
    "adjust_brightness": lambda: ops.adjust_brightness(img, 0.3),
    "adjust_brightness_u8": lambda: ops.adjust_brightness(img_u8, 0.3),
    "adjust_contrast": lambda: ops.adjust_contrast(img, 1.7),
    "adjust_contrast_u8": lambda: ops.adjust_contrast(img_u8, 0.4),
    "adjust_gamma": lambda: ops.adjust_gamma(img, 0.5, 1.2),
    "adjust_gamma_u8": lambda: ops.adjust_gamma(img_u8, 2.0),
    "adjust_hue": lambda: ops.adjust_hue(img, 0.3),
    "adjust_hue_neg": lambda: ops.adjust_hue(img, -0.45),
    "adjust_hue_u8": lambda: ops.adjust_hue(img_u8, 0.2),
    "adjust_saturation": lambda: ops.adjust_saturation(img, 1.8),
    "adjust_saturation_u8": lambda: ops.adjust_saturation(img_u8, 0.3),
    "per_image_standardization": lambda: ops.per_image_standardization(img),
    "per_image_standardization_u8": lambda: ops.per_image_standardization(img_u8),
    "convert_u8_f32": lambda: ops.convert_image_dtype(img_u8, tf.float32),
    "convert_f32_u8": lambda: ops.convert_image_dtype(img * 1.1 - 0.05, tf.uint8, saturate=True),
    "convert_u8_i32": lambda: ops.convert_image_dtype(img_u8, tf.int32),
    "convert_i32_u8": lambda: ops.convert_image_dtype(
        ops.convert_image_dtype(img_u8, tf.int32), tf.uint8),
    "central_crop": lambda: ops.central_crop(img, 0.6),
    "central_crop_3d": lambda: ops.central_crop(img[0], 0.33),
    "crop_to_bounding_box": lambda: ops.crop_to_bounding_box(img, 2, 3, 4, 5),
    "pad_to_bounding_box": lambda: ops.pad_to_bounding_box(img, 1, 2, 13, 15),
    "resize_with_crop_or_pad_up": lambda: ops.resize_with_crop_or_pad(img, 13, 15),
    "resize_with_crop_or_pad_down": lambda: ops.resize_with_crop_or_pad(img, 4, 7),
    "resize_with_crop_or_pad_mixed": lambda: ops.resize_with_crop_or_pad(img[0], 6, 17),
    "resize_with_pad": lambda: ops.resize_with_pad(img, 10, 20),
    "rot90_1": lambda: ops.rot90(img, 1),
    "rot90_2": lambda: ops.rot90(img[0], 2),
    "rot90_3": lambda: ops.rot90(img, 3),
    "transpose": lambda: ops.transpose(img),
    "flip_left_right": lambda: ops.flip_left_right(img),
    "flip_up_down": lambda: ops.flip_up_down(img[0]),
    "crop_and_resize": lambda: ops.crop_and_resize(img, boxes, box_indices, [5, 4]),
    "crop_and_resize_nearest": lambda: ops.crop_and_resize(
        img, boxes, box_indices, [5, 4], method="nearest", extrapolation_value=-1.0),
    "crop_and_resize_one": lambda: ops.crop_and_resize(img, boxes, box_indices, [1, 1]),
    "extract_patches_valid": lambda: ops.extract_patches(img, [1, 3, 2, 1], [1, 2, 3, 1],
                                                         [1, 1, 1, 1], "VALID"),
    "extract_patches_same": lambda: ops.extract_patches(img, [1, 3, 3, 1], [1, 2, 2, 1],
                                                        [1, 2, 1, 1], "SAME"),
    "psnr": lambda: ops.psnr(img, other, 1.0),
    "psnr_u8": lambda: ops.psnr(img_u8, np.flipud(img_u8).copy(), 255),
    "ssim": lambda: ops.ssim(big, big2, 1.0),
    "ssim_small_filter": lambda: ops.ssim(img, other, 1.0, filter_size=5, filter_sigma=1.0),
    "ssim_multiscale": lambda: ops.ssim_multiscale(big, big2, 1.0, power_factors=(0.5, 0.5),
                                                   filter_size=5),
    "total_variation": lambda: ops.total_variation(img),
    "total_variation_3d": lambda: ops.total_variation(img[0]),
    "image_gradients_dy": lambda: ops.image_gradients(img)[0],
    "image_gradients_dx": lambda: ops.image_gradients(img)[1],
    "sobel_edges": lambda: ops.sobel_edges(img),
}
# integer outputs must be equal; float ones agree to float32 rounding (TF's fused kernels and
# its BLAS sum in another order; the hue of a pixel shifts one ulp across a wrap)
TOLERANCE = {"total_variation": 2e-5, "total_variation_3d": 2e-5, "ssim": 2e-6,
             "ssim_multiscale": 2e-6, "ssim_small_filter": 2e-6, "psnr": 5e-6, "psnr_u8": 5e-6}


def test_every_recorded_case_is_checked():
    recorded = set(REF.files) - {"img", "img_u8", "other", "big", "big2", "boxes",
                                 "box_indices"}
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
