"""PNG/JPEG decoding and encoding through Pillow (`tf.image.decode_png`, `decode_jpeg`, ...)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from tapeflow.data import structure, vectorize
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.tensor import EagerTensor, wrap

_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}

try:
    import simplejpeg as _simplejpeg
except ImportError:  # optional extra "jpeg": Pillow decodes instead
    _simplejpeg = None


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("tapeflow.image needs Pillow: pip install pillow") from None
    return Image


def _bytes(contents: Any) -> bytes:
    arr = structure.to_array(contents)
    if arr.dtype != object or arr.ndim != 0:
        raise errors.InvalidArgumentError(
            f"contents must be a scalar string tensor, got dtype {arr.dtype} shape "
            f"{list(arr.shape)}\n{errors.user_line()}")
    return arr[()]


def _decode(contents: Any, channels: int | None, dtype: Any, fmt: str | None) -> EagerTensor:
    Image = _pil()
    data = _bytes(contents)
    try:
        img = Image.open(io.BytesIO(data))
        if fmt is not None and img.format not in fmt:
            raise errors.InvalidArgumentError(
                f"decode_{fmt.lower().split(',')[0]}: data is {img.format}, not {fmt}")
        img.load()
    except (OSError, SyntaxError) as e:
        raise errors.InvalidArgumentError(f"Cannot decode image data ({len(data)} bytes): {e}") \
            from None
    if channels:
        img = img.convert(_MODES[channels])
    elif img.mode not in ("L", "LA", "RGB", "RGBA", "I;16"):
        img = img.convert("RGBA" if "A" in img.mode or "transparency" in img.info else "RGB")
    arr = np.asarray(img)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    out_dtype = _dtypes.as_dtype(dtype)
    if out_dtype is _dtypes.uint8 and arr.dtype != np.uint8:
        arr = (arr >> 8).astype(np.uint8)
    elif out_dtype is not _dtypes.uint8 and out_dtype is not _dtypes.uint16:
        arr = arr.astype(np.float32) / (65535.0 if arr.dtype == np.uint16 else 255.0)
        arr = arr.astype(out_dtype._np)
    else:
        arr = arr.astype(out_dtype._np)
    return wrap(np.ascontiguousarray(arr))


def decode_png(contents: Any, channels: int = 0, dtype: Any = _dtypes.uint8,
               name: str | None = None) -> EagerTensor:
    """A PNG as a [height, width, channels] tensor (channels=0: as stored)."""
    return _decode(contents, channels, dtype, "PNG")


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: str | None = None) -> EagerTensor:
    """A JPEG as a uint8 [height, width, channels] tensor.

    Decoded by libjpeg-turbo through `simplejpeg` when it is installed (about 3x faster than
    Pillow on small images, and it releases the GIL, so parallel map threads decode at once);
    anything it does not take (CMYK, odd channel requests, damaged data) goes to Pillow.
    In a map that tf.data runs on whole batches (data/vectorize.py), a vector of JPEGs of one
    size decodes to a [batch, height, width, channels] tensor."""
    data = structure.to_array(contents)
    if data.ndim == 1 and data.dtype == object and vectorize.active():
        return wrap(np.stack([decode_jpeg(wrap(data[i, ...]), channels, ratio, fancy_upscaling,
                                          dct_method=dct_method)._value
                              for i in range(data.shape[0])]))
    if _simplejpeg is not None and channels in (0, 1, 3):
        arr = _turbo_decode(_bytes(contents), channels, fancy_upscaling, dct_method)
        if arr is not None:
            return wrap(arr)
    return _decode(contents, channels, _dtypes.uint8, "JPEG,MPO")


def _turbo_decode(data: bytes, channels: int, fancy_upscaling: bool,
                  dct_method: str) -> np.ndarray | None:
    try:
        space = _simplejpeg.decode_jpeg_header(data)[2]
        if space not in ("Gray", "YCbCr", "RGB"):   # CMYK and the like: Pillow converts them
            return None
        gray = channels == 1 or (channels == 0 and space == "Gray")
        arr = _simplejpeg.decode_jpeg(data, colorspace="GRAY" if gray else "RGB",
                                      fastdct=dct_method == "INTEGER_FAST",
                                      fastupsample=not fancy_upscaling)
    except ValueError:   # not a JPEG simplejpeg reads: Pillow decides (and names the problem)
        return None
    return arr if arr.ndim == 3 else arr[:, :, None]


def decode_image(contents: Any, channels: int | None = None, dtype: Any = _dtypes.uint8,
                 name: str | None = None, expand_animations: bool = True) -> EagerTensor:
    """PNG, JPEG, GIF or BMP, detected from the data."""
    return _decode(contents, channels, dtype, None)


def _encode(image: Any, fmt: str, **kw: Any) -> EagerTensor:
    Image = _pil()
    arr = structure.to_array(image)
    if arr.ndim != 3 or arr.shape[2] not in _MODES:
        raise errors.InvalidArgumentError(
            f"encode_{fmt.lower()}: image must be [height, width, 1-4], got {list(arr.shape)}")
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    img = Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr, _MODES[arr.shape[2]])
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    out = np.empty((), dtype=object)
    out[()] = buf.getvalue()
    return wrap(out)


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> EagerTensor:
    """Encode a uint8 [height, width, channels] image as PNG bytes."""
    return _encode(image, "PNG", compress_level=6 if compression < 0 else compression)


def encode_jpeg(image: Any, format: str = "", quality: int = 95, **_: Any) -> EagerTensor:
    """Encode a uint8 [height, width, channels] image as JPEG bytes."""
    return _encode(image, "JPEG", quality=quality)
