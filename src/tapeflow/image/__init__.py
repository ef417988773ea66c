"""`tf.image`: decoding/encoding through Pillow, resize and simple geometric helpers."""

from tapeflow.image.decode import decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png
from tapeflow.image.resize import (
    ResizeMethod,
    convert_image_dtype,
    flip_left_right,
    flip_up_down,
    resize,
)

__all__ = ["ResizeMethod", "convert_image_dtype", "decode_image", "decode_jpeg", "decode_png",
           "encode_jpeg", "encode_png", "flip_left_right", "flip_up_down", "resize"]
