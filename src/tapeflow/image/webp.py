"""`tf.image.decode_webp` / `tf.io.decode_webp`: WebP bytes (still or animated) to a uint8
[frames, height, width, channels] tensor through Pillow's libwebp, as TF 2.21 returns it: the
native channels (3, or 4 with alpha) by default, a different channel count an error."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.image.decode import _open


@op("DecodeWebP", shape=lambda x, *, channels: ((None, None, None, channels or None),
                                                 _dtypes.uint8))
def _decode_webp(contents, *, channels):
    from PIL import ImageSequence

    img = _open(contents[()] if contents.ndim == 0 else contents, "WEBP", "decode_webp")
    native = 4 if "A" in img.mode else 3
    if channels and channels != native:
        raise errors.InvalidArgumentError(
            f"decode_webp: Number of channels requested ({channels}) does not match input "
            f"({native})")
    mode = "RGBA" if native == 4 else "RGB"
    frames = [np.asarray(frame.convert(mode)) for frame in ImageSequence.Iterator(img)]
    return np.stack(frames).astype(np.uint8)


@export("image.decode_webp", "io.decode_webp")
def decode_webp(contents: Any, channels: int = 0, dtype: Any = _dtypes.uint8,
                name: str | None = None) -> Any:
    """[frames, height, width, channels] uint8 pixels of a WebP image (channels 0: as stored)."""
    if int(channels) not in (0, 3, 4):
        raise ValueError(f"decode_webp: channels must be 0, 3 or 4, got {channels}")
    if _dtypes.as_dtype(dtype) != _dtypes.uint8:
        raise TypeError(f"decode_webp: dtype must be uint8, got {_dtypes.as_dtype(dtype).name}")
    return apply(_decode_webp, convert_to_tensor(contents, _dtypes.string),
                 channels=int(channels))
