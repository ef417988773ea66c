"""PNG/JPEG decoding and encoding through Pillow (`tf.image.decode_png`, `decode_jpeg`, ...)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from tapeflow.data import vectorize
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor, wrap

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


def _bytes(data: np.ndarray, op_name: str) -> bytes:
    if data.dtype != object or data.ndim != 0:
        raise errors.InvalidArgumentError(
            f"{op_name}: contents must be a scalar string tensor, got dtype {data.dtype} shape "
            f"{list(data.shape)}")
    return data[()]


def _pixels(img: Any, channels: int | None, dtype: _dtypes.DType) -> np.ndarray:
    """A decoded Pillow image as [height, width, channels] of `dtype` (TF's scaling)."""
    if channels:
        img = img.convert(_MODES[channels])
    elif img.mode not in ("L", "LA", "RGB", "RGBA", "I;16"):
        img = img.convert("RGBA" if "A" in img.mode or "transparency" in img.info else "RGB")
    arr = np.asarray(img)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if dtype is _dtypes.uint8 and arr.dtype != np.uint8:
        arr = (arr >> 8).astype(np.uint8)
    elif dtype is not _dtypes.uint8 and dtype is not _dtypes.uint16:
        arr = arr.astype(np.float32) / (65535.0 if arr.dtype == np.uint16 else 255.0)
        arr = arr.astype(dtype._np)
    else:
        arr = arr.astype(dtype._np)
    return np.ascontiguousarray(arr)


def _open(data: bytes, fmt: str | None, op_name: str) -> Any:
    Image = _pil()
    try:
        img = Image.open(io.BytesIO(data))
        if fmt is not None and img.format not in fmt:
            raise errors.InvalidArgumentError(
                f"{op_name}: data is {img.format}, not {fmt.split(',')[0]}")
        img.load()
    except (OSError, SyntaxError) as e:
        raise errors.InvalidArgumentError(
            f"{op_name}: Cannot decode image data ({len(data)} bytes): {e}") from None
    return img


def _frames(img: Any, channels: int | None, dtype: _dtypes.DType) -> np.ndarray:
    """Every frame of an animation (GIF) as [frames, height, width, channels]."""
    from PIL import ImageSequence

    return np.stack([_pixels(f.convert("RGB"), channels, dtype)
                     for f in ImageSequence.Iterator(img)])


def _decode_kernel(contents, *, fmt, channels, dtype, animations, op_name):
    img = _open(_bytes(contents, op_name), fmt, op_name)
    if img.format == "GIF" and animations:
        return _frames(img, channels or 3, dtype)
    return _pixels(img, channels, dtype)


def _decode_shape(contents, *, fmt, channels, dtype, animations, op_name):
    if animations and fmt in ("GIF", None):
        return (None if fmt is None else (None, None, None, 3)), dtype
    return (None, None, channels or None), dtype


_decode_op = op("DecodeImage", shape=_decode_shape, output="fresh")(_decode_kernel)


def _decode(contents: Any, channels: int | None, dtype: Any, fmt: str | None, op_name: str,
            animations: bool = False) -> Tensor:
    return apply(_decode_op, convert_to_tensor(contents, _dtypes.string), fmt=fmt,
                 channels=int(channels or 0), dtype=_dtypes.as_dtype(dtype),
                 animations=animations, op_name=op_name)


def decode_png(contents: Any, channels: int = 0, dtype: Any = _dtypes.uint8,
               name: str | None = None) -> Tensor:
    """A PNG as a [height, width, channels] tensor (channels=0: as stored)."""
    return _decode(contents, channels, dtype, "PNG", "decode_png")


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """A BMP as a uint8 [height, width, channels] tensor."""
    return _decode(contents, channels, _dtypes.uint8, "BMP", "decode_bmp")


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """A GIF's frames as a uint8 [frames, height, width, 3] tensor."""
    return _decode(contents, 3, _dtypes.uint8, "GIF", "decode_gif", animations=True)


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: str | None = None) -> Tensor:
    """A JPEG as a uint8 [height, width, channels] tensor.

    Decoded by libjpeg-turbo through `simplejpeg` when it is installed (about 3x faster than
    Pillow on small images, and it releases the GIL, so parallel map threads decode at once);
    anything it does not take (CMYK, odd channel requests, damaged data) goes to Pillow.
    `dct_method=""` is TensorFlow's default, libjpeg's fast integer DCT ("INTEGER_FAST"), so the
    pixels are TensorFlow's; "INTEGER_ACCURATE" takes the slower exact one (Pillow's).
    In a map that tf.data runs on whole batches (data/vectorize.py), a vector of JPEGs of one
    size decodes to a [batch, height, width, channels] tensor."""
    x = convert_to_tensor(contents, _dtypes.string)
    if x.shape.rank == 1 and vectorize.active():
        return wrap(_decode_jpeg_batch(x._value, int(channels), fancy_upscaling, dct_method))
    return apply(_decode_jpeg, x, channels=int(channels), fancy_upscaling=fancy_upscaling,
                 dct_method=dct_method)


@op("DecodeJpeg", output="fresh",
    shape=lambda x, *, channels, fancy_upscaling, dct_method: ((None, None, channels or None),
                                                               _dtypes.uint8))
def _decode_jpeg(contents, *, channels, fancy_upscaling, dct_method):
    data = _bytes(contents, "decode_jpeg")
    if _simplejpeg is not None and channels in (0, 1, 3):
        arr = _turbo_decode(data, channels, fancy_upscaling, dct_method)
        if arr is not None:
            return arr
    return _pixels(_open(data, "JPEG,MPO", "decode_jpeg"), channels, _dtypes.uint8)


def _decode_jpeg_batch(contents: np.ndarray, channels: int, fancy_upscaling: bool,
                       dct_method: str) -> np.ndarray:
    """A vector of JPEGs as one [batch, height, width, channels] array. When libjpeg-turbo takes
    them all and they share one size, each decodes straight into its row of the result (no
    per-image op call or copy); otherwise image by image, stacked (ValueError if sizes differ)."""
    items = [_bytes(contents[i, ...], "decode_jpeg") for i in range(contents.shape[0])]
    if _simplejpeg is not None and channels in (0, 1, 3) and items:
        try:
            heads = {_simplejpeg.decode_jpeg_header(b)[:3] for b in items}
        except ValueError:
            heads = set()
        if len(heads) == 1:
            h, w, space = heads.pop()
            gray = channels == 1 or (channels == 0 and space == "Gray")
            if space in ("Gray", "YCbCr", "RGB"):
                out = np.empty((len(items), h, w, 1 if gray else 3), np.uint8)
                for i, b in enumerate(items):
                    _simplejpeg.decode_jpeg(b, colorspace="GRAY" if gray else "RGB",
                                            fastdct=dct_method != "INTEGER_ACCURATE",
                                            fastupsample=not fancy_upscaling, buffer=out[i])
                return out
    return np.stack([_decode_jpeg.kernel(c, channels=channels, fancy_upscaling=fancy_upscaling,
                                         dct_method=dct_method) for c in contents])


def _turbo_decode(data: bytes, channels: int, fancy_upscaling: bool,
                  dct_method: str) -> np.ndarray | None:
    try:
        space = _simplejpeg.decode_jpeg_header(data)[2]
        if space not in ("Gray", "YCbCr", "RGB"):   # CMYK and the like: Pillow converts them
            return None
        gray = channels == 1 or (channels == 0 and space == "Gray")
        arr = _simplejpeg.decode_jpeg(data, colorspace="GRAY" if gray else "RGB",
                                      fastdct=dct_method != "INTEGER_ACCURATE",
                                      fastupsample=not fancy_upscaling)
    except ValueError:   # not a JPEG simplejpeg reads: Pillow decides (and names the problem)
        return None
    return arr if arr.ndim == 3 else arr[:, :, None]


def decode_image(contents: Any, channels: int | None = None, dtype: Any = _dtypes.uint8,
                 name: str | None = None, expand_animations: bool = True) -> Tensor:
    """PNG, JPEG, GIF or BMP, detected from the data (a GIF's frames: a 4-D tensor)."""
    return _decode(contents, channels, dtype, None, "decode_image", expand_animations)


def _encode_kernel(image, *, fmt, options):
    Image = _pil()
    arr = image
    if arr.ndim != 3 or arr.shape[2] not in _MODES:
        raise errors.InvalidArgumentError(
            f"encode_{fmt.lower()}: image must be [height, width, 1-4], got {list(arr.shape)}")
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    img = Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr, _MODES[arr.shape[2]])
    buf = io.BytesIO()
    img.save(buf, format=fmt, **dict(options))
    out = np.empty((), dtype=object)
    out[()] = buf.getvalue()
    return out


_encode_op = op("EncodeImage", shape=lambda x, *, fmt, options: ((), _dtypes.string))(
    _encode_kernel)


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> Tensor:
    """Encode a uint8 [height, width, channels] image as PNG bytes."""
    return apply(_encode_op, convert_to_tensor(image), fmt="PNG",
                 options=(("compress_level", 6 if compression < 0 else compression),))


def encode_jpeg(image: Any, format: str = "", quality: int = 95, **_: Any) -> Tensor:
    """Encode a uint8 [height, width, channels] image as JPEG bytes."""
    return apply(_encode_op, convert_to_tensor(image), fmt="JPEG",
                 options=(("quality", int(quality)),))


@op("IsJpeg", shape=lambda x: ((), _dtypes.bool))
def _is_jpeg(contents):
    return np.asarray(_bytes(contents, "is_jpeg")[:3] == b"\xff\xd8\xff")


def is_jpeg(contents: Any, name: str | None = None) -> Tensor:
    """True when the string starts with JPEG's magic bytes."""
    return apply(_is_jpeg, convert_to_tensor(contents, _dtypes.string))


@op("ExtractJpegShape", shape=lambda x, *, output_type: ((3,), output_type))
def _extract_jpeg_shape(contents, *, output_type):
    img = _open(_bytes(contents, "extract_jpeg_shape"), "JPEG,MPO", "extract_jpeg_shape")
    img_channels = {"L": 1, "CMYK": 4}.get(img.mode, 3)
    return np.asarray([img.height, img.width, img_channels], dtype=output_type._np)


def extract_jpeg_shape(contents: Any, output_type: Any = _dtypes.int32,
                       name: str | None = None) -> Tensor:
    """[height, width, channels] of a JPEG, read from its header."""
    return apply(_extract_jpeg_shape, convert_to_tensor(contents, _dtypes.string),
                 output_type=_dtypes.as_dtype(output_type))


def decode_and_crop_jpeg(contents: Any, crop_window: Any, channels: int = 0,
                         **kwargs: Any) -> Tensor:
    """decode_jpeg, then the window [y, x, height, width]."""
    image = decode_jpeg(contents, channels, **kwargs)
    w = convert_to_tensor(crop_window, _dtypes.int32)
    return image[w[0]:w[0] + w[2], w[1]:w[1] + w[3]]
