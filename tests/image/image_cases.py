"""The tf.image cases recorded from TensorFlow (reference/make_image_values.py) and checked on
tapeflow (test_image_reference.py): one table, called with either framework."""

from typing import Any

import numpy as np

INPUTS = ("img", "img_u8", "other", "big", "big2", "boxes", "box_indices")


def image_cases(tf: Any, data: dict) -> dict:
    """name -> zero-argument function computing the case with framework `tf` on `data`."""
    ops = tf.image
    img, img_u8, other = data["img"], data["img_u8"], data["other"]
    big, big2, boxes, box_indices = data["big"], data["big2"], data["boxes"], data["box_indices"]
    hsv = data["hsv"]
    return {
        "rgb_to_hsv": lambda: ops.rgb_to_hsv(img),
        "hsv_to_rgb": lambda: ops.hsv_to_rgb(hsv),
        "rgb_to_yiq": lambda: ops.rgb_to_yiq(img),
        "yiq_to_rgb": lambda: ops.yiq_to_rgb(img),
        "rgb_to_yuv": lambda: ops.rgb_to_yuv(img),
        "yuv_to_rgb": lambda: ops.yuv_to_rgb(img),
        "rgb_to_grayscale": lambda: ops.rgb_to_grayscale(img),
        "rgb_to_grayscale_u8": lambda: ops.rgb_to_grayscale(img_u8),
        "grayscale_to_rgb": lambda: ops.grayscale_to_rgb(tf.constant(img[..., :1])),
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
        "convert_f32_u8": lambda: ops.convert_image_dtype(img * 1.1 - 0.05, tf.uint8,
                                                          saturate=True),
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
        "total_variation": lambda: ops.total_variation(tf.constant(img)),
        "total_variation_3d": lambda: ops.total_variation(tf.constant(img[0])),
        "image_gradients_dy": lambda: ops.image_gradients(tf.constant(img))[0],
        "image_gradients_dx": lambda: ops.image_gradients(tf.constant(img))[1],
        "sobel_edges": lambda: ops.sobel_edges(tf.constant(img)),
    }
