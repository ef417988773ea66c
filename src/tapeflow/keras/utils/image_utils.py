"""``tf.keras.utils`` image helpers: ``load_img``, ``img_to_array``, ``array_to_img``,
``save_img`` (Pillow, which tapeflow already uses to decode images)."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

_RESAMPLE = {"nearest": 0, "bilinear": 2, "bicubic": 3, "lanczos": 1, "box": 4, "hamming": 5}


def _pil() -> Any:
    from PIL import Image

    return Image


def array_to_img(x: Any, data_format: str | None = None, scale: bool = True,
                 dtype: Any = None) -> Any:
    """A 3D array (height, width, 1|3|4 channels) as a PIL image; with `scale`, values are
    stretched to 0-255 first."""
    from tapeflow.keras import backend

    data_format = data_format or backend.image_data_format()
    x = np.asarray(x, dtype=dtype or backend.floatx())
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with "
                         f"shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        peak = np.max(x)
        if peak != 0:
            x = x / peak
        x = x * 255
    channels = x.shape[2]
    image = _pil()
    if channels == 4:
        return image.fromarray(x.astype("uint8"), "RGBA")
    if channels == 3:
        return image.fromarray(x.astype("uint8"), "RGB")
    if channels == 1:
        if np.max(x) > 255:  # 32-bit signed integer grayscale image, as Keras
            return image.fromarray(x[:, :, 0].astype("int32"), "I")
        return image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def img_to_array(img: Any, data_format: str | None = None, dtype: Any = None) -> np.ndarray:
    """A PIL image as a float array (height, width, channels)."""
    from tapeflow.keras import backend

    data_format = data_format or backend.image_data_format()
    x = np.asarray(img, dtype=dtype or backend.floatx())
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError(f"Unsupported image shape: {x.shape}")
    return x.transpose(2, 0, 1) if data_format == "channels_first" else x


def load_img(path: Any, grayscale: bool = False, color_mode: str = "rgb",
             target_size: tuple | None = None, interpolation: str = "nearest",
             keep_aspect_ratio: bool = False) -> Any:
    """Read an image file (or bytes / file object) as a PIL image in `color_mode`
    (``grayscale``, ``rgb``, ``rgba``), resized to `target_size` (height, width) if given."""
    image = _pil()
    if grayscale:
        color_mode = "grayscale"
    if isinstance(path, io.BytesIO):
        img = image.open(path)
    elif isinstance(path, (str, os.PathLike, bytes)):
        path = os.fsdecode(path) if isinstance(path, bytes) else str(path)
        with open(path, "rb") as f:
            img = image.open(io.BytesIO(f.read()))
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    modes = {"grayscale": "L", "rgba": "RGBA", "rgb": "RGB"}
    if color_mode not in modes:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    if img.mode not in (modes[color_mode], "I;16", "I") or color_mode != "grayscale":
        if img.mode != modes[color_mode]:
            img = img.convert(modes[color_mode])
    if target_size is not None:
        size = (target_size[1], target_size[0])
        if img.size != size:
            if interpolation not in _RESAMPLE:
                raise ValueError(f"Invalid interpolation method {interpolation} specified. "
                                 f"Supported methods are {', '.join(_RESAMPLE)}")
            box = None
            if keep_aspect_ratio:  # resample only the centre box of the target aspect ratio
                width, height = img.size
                crop_h = min(height, width * target_size[0] // target_size[1])
                crop_w = min(width, height * target_size[1] // target_size[0])
                top, left = (height - crop_h) // 2, (width - crop_w) // 2
                # as Keras: Pillow's `box` (its filter also reads the pixels just outside)
                box = (left, top, left + crop_w, top + crop_h)
            img = img.resize(size, _RESAMPLE[interpolation], box=box)
    return img


def save_img(path: Any, x: Any, data_format: str | None = None, file_format: str | None = None,
             scale: bool = True, **kwargs: Any) -> None:
    """Write an image array to `path` (format from the extension unless `file_format`)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and (file_format == "jpg" or file_format == "jpeg" or (
            file_format is None and str(path).lower().endswith((".jpg", ".jpeg")))):
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)
