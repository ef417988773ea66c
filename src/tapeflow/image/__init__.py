"""`tf.image`: decoding and encoding (Pillow), resizing, colour spaces, photometric and geometric
transforms, window sampling and quality measures.

Everything but decoding, encoding and `resize` is written in tapeflow ops (or is a primitive op
with a gradient), so it traces in `tf.function`, runs in `Dataset.map` and differentiates.
"""

from tapeflow.image import boxes as _boxes  # draw_bounding_boxes, combined NMS, crops
from tapeflow.image import jpeg_and_crops as _jpeg_and_crops  # jpeg quality, glimpse
from tapeflow.image import webp as _webp  # decode_webp
from tapeflow.image.adjust import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    per_image_standardization,
    random_brightness,
    random_contrast,
    random_hue,
    random_saturation,
)
from tapeflow.image.color import (
    grayscale_to_rgb,
    hsv_to_rgb,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_yiq,
    rgb_to_yuv,
    yiq_to_rgb,
    yuv_to_rgb,
)
from tapeflow.image.decode import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
    is_jpeg,
)
from tapeflow.image.dtype import convert_image_dtype, saturate_cast
from tapeflow.image.geometry import (
    central_crop,
    crop_to_bounding_box,
    flip_left_right,
    flip_up_down,
    pad_to_bounding_box,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    resize_with_crop_or_pad,
    resize_with_pad,
    rot90,
    transpose,
)
from tapeflow.image.nms import (
    non_max_suppression,
    non_max_suppression_overlaps,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
)
from tapeflow.image.projective import image_projective_transform_v3
from tapeflow.image.quality import (
    image_gradients,
    psnr,
    sobel_edges,
    ssim,
    ssim_multiscale,
    total_variation,
)
from tapeflow.image.resize import ResizeMethod, resize
from tapeflow.image.sampling import crop_and_resize, extract_patches
from tapeflow.image.stateless import (
    stateless_random_brightness,
    stateless_random_contrast,
    stateless_random_flip_left_right,
    stateless_random_flip_up_down,
    stateless_random_hue,
    stateless_random_saturation,
)

resize_image_with_crop_or_pad = resize_with_crop_or_pad

__all__ = [
    "stateless_random_brightness", "stateless_random_contrast", "stateless_random_flip_left_right",
    "stateless_random_flip_up_down", "stateless_random_hue", "stateless_random_saturation",
    "non_max_suppression", "non_max_suppression_overlaps", "non_max_suppression_padded",
    "non_max_suppression_with_scores",
    "ResizeMethod", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue",
    "adjust_saturation", "central_crop", "convert_image_dtype", "crop_and_resize",
    "crop_to_bounding_box", "decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_image",
    "decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "extract_jpeg_shape",
    "extract_patches", "flip_left_right", "flip_up_down", "grayscale_to_rgb", "hsv_to_rgb",
    "image_gradients", "is_jpeg", "pad_to_bounding_box", "per_image_standardization", "psnr",
    "random_brightness", "random_contrast", "random_crop", "random_flip_left_right",
    "random_flip_up_down", "random_hue", "random_saturation", "resize", "resize_with_crop_or_pad",
    "resize_with_pad", "rgb_to_grayscale", "rgb_to_hsv", "rgb_to_yiq", "rgb_to_yuv", "rot90",
    "saturate_cast", "sobel_edges", "ssim", "ssim_multiscale", "total_variation", "transpose",
    "yiq_to_rgb", "yuv_to_rgb",
]
