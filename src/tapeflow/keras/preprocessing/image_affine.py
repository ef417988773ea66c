"""Keras 2's NumPy image augmentations (``tf.keras.preprocessing.image.apply_affine_transform``,
``random_rotation`` ...): one 2-D image (rank 3, channels first or last) at a time.

``apply_affine_transform`` composes rotation, shift, shear and zoom into one 3x3 matrix about
the image centre and resamples each channel with ``scipy.ndimage.affine_transform`` (spline
`order`, Keras's default 1 = bilinear; SciPy's ``mode`` is Keras's ``fill_mode``), so outputs
equal tf-keras's. The ``random_*`` helpers draw from NumPy's global generator, as Keras's do.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def flip_axis(x: np.ndarray, axis: int) -> np.ndarray:
    """`x` reversed along `axis`."""
    return np.flip(np.asarray(x), axis)


def transform_matrix_offset_center(matrix: np.ndarray, x: float, y: float) -> np.ndarray:
    """`matrix` conjugated so it acts about the centre of an x-by-y image."""
    o_x, o_y = float(x) / 2 - 0.5, float(y) / 2 - 0.5
    to_center = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    back = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return to_center @ matrix @ back


def _affine_matrix(theta: float, tx: float, ty: float, shear: float, zx: float,
                   zy: float) -> np.ndarray | None:
    """rotation @ shift @ shear @ zoom (angles in degrees), or None for the identity."""
    parts = []
    if theta != 0:
        t = np.deg2rad(theta)
        parts.append(np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0],
                               [0, 0, 1]]))
    if tx != 0 or ty != 0:
        parts.append(np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]]))
    if shear != 0:
        s = np.deg2rad(shear)
        parts.append(np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]]))
    if zx != 1 or zy != 1:
        parts.append(np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]]))
    if not parts:
        return None
    matrix = parts[0]
    for part in parts[1:]:
        matrix = matrix @ part
    return matrix


def apply_affine_transform(x: np.ndarray, theta: float = 0, tx: float = 0, ty: float = 0,
                           shear: float = 0, zx: float = 1, zy: float = 1, row_axis: int = 1,
                           col_axis: int = 2, channel_axis: int = 0,
                           fill_mode: str = "nearest", cval: float = 0.0,
                           order: int = 1) -> np.ndarray:
    """Rotate by `theta` degrees, shift by (`tx` rows, `ty` columns), shear by `shear`
    degrees and zoom by (`zx`, `zy`) one image, about its centre; points from outside are
    filled by `fill_mode` ('constant' with `cval`, 'nearest', 'reflect', 'wrap')."""
    from scipy import ndimage

    if np.unique([row_axis, col_axis, channel_axis]).size != 3:
        raise ValueError("'row_axis', 'col_axis', and 'channel_axis' must be distinct")
    extra = {row_axis, col_axis, channel_axis} - {0, 1, 2}
    if extra:
        raise ValueError(f"Invalid axis' indices: {extra}")
    if x.ndim != 3:
        raise ValueError("Input arrays must be multi-channel 2D images.")
    if channel_axis not in (0, 2):
        raise ValueError("Channels are allowed and the first and last dimensions.")
    matrix = _affine_matrix(theta, tx, ty, shear, zx, zy)
    if matrix is None:
        return x
    matrix = transform_matrix_offset_center(matrix, x.shape[row_axis], x.shape[col_axis])
    if col_axis > row_axis:  # the matrix is written in (row, col) order: swap to array order
        matrix[:, [0, 1]] = matrix[:, [1, 0]]
        matrix[[0, 1]] = matrix[[1, 0]]
    channels = np.moveaxis(x, channel_axis, 0)
    out = np.stack([ndimage.affine_transform(c, matrix[:2, :2], matrix[:2, 2], order=order,
                                             mode=fill_mode, cval=cval) for c in channels])
    return np.moveaxis(out, 0, channel_axis)


def apply_channel_shift(x: np.ndarray, intensity: float, channel_axis: int = 0) -> np.ndarray:
    """Add `intensity` to every channel, clipped to the image's own [min, max]."""
    channels = np.moveaxis(x, channel_axis, 0)
    low, high = np.min(channels), np.max(channels)
    return np.moveaxis(np.clip(channels + intensity, low, high), 0, channel_axis)


def apply_brightness_shift(x: np.ndarray, brightness: float, scale: bool = True) -> np.ndarray:
    """Pillow's ``ImageEnhance.Brightness(brightness)`` on the image (values outside 0-255
    are scaled into it and, with ``scale=False``, back out afterwards)."""
    from PIL import ImageEnhance

    from tapeflow.keras.utils.image_utils import array_to_img, img_to_array

    low, high = np.min(x), np.max(x)
    local_scale = bool(low < 0 or high > 255)
    img = ImageEnhance.Brightness(array_to_img(x, scale=local_scale or scale))
    out = img_to_array(img.enhance(brightness))
    if not scale and local_scale:
        out = out / 255 * (high - low) + low
    return out


def random_rotation(x: np.ndarray, rg: float, row_axis: int = 1, col_axis: int = 2,
                    channel_axis: int = 0, fill_mode: str = "nearest", cval: float = 0.0,
                    interpolation_order: int = 1) -> np.ndarray:
    """Rotate by an angle drawn uniformly from [-rg, rg] degrees."""
    theta = np.random.uniform(-rg, rg)
    return apply_affine_transform(x, theta=theta, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_shift(x: np.ndarray, wrg: float, hrg: float, row_axis: int = 1, col_axis: int = 2,
                 channel_axis: int = 0, fill_mode: str = "nearest", cval: float = 0.0,
                 interpolation_order: int = 1) -> np.ndarray:
    """Shift by fractions drawn from [-hrg, hrg] of the height and [-wrg, wrg] of the width."""
    h, w = x.shape[row_axis], x.shape[col_axis]
    tx = np.random.uniform(-hrg, hrg) * h
    ty = np.random.uniform(-wrg, wrg) * w
    return apply_affine_transform(x, tx=tx, ty=ty, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_shear(x: np.ndarray, intensity: float, row_axis: int = 1, col_axis: int = 2,
                 channel_axis: int = 0, fill_mode: str = "nearest", cval: float = 0.0,
                 interpolation_order: int = 1) -> np.ndarray:
    """Shear by an angle drawn from [-intensity, intensity] degrees."""
    shear = np.random.uniform(-intensity, intensity)
    return apply_affine_transform(x, shear=shear, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_zoom(x: np.ndarray, zoom_range: Any, row_axis: int = 1, col_axis: int = 2,
                channel_axis: int = 0, fill_mode: str = "nearest", cval: float = 0.0,
                interpolation_order: int = 1) -> np.ndarray:
    """Zoom rows and columns by two factors drawn from `zoom_range` (a pair)."""
    if len(zoom_range) != 2:
        raise ValueError("`zoom_range` should be a tuple or list of two floats. Received: "
                         f"{zoom_range}")
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        zx, zy = 1, 1
    else:
        zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return apply_affine_transform(x, zx=zx, zy=zy, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=interpolation_order)


def random_channel_shift(x: np.ndarray, intensity_range: float,
                         channel_axis: int = 0) -> np.ndarray:
    """`apply_channel_shift` by an intensity drawn from [-intensity_range, intensity_range]."""
    intensity = np.random.uniform(-intensity_range, intensity_range)
    return apply_channel_shift(x, intensity, channel_axis=channel_axis)


def random_brightness(x: np.ndarray, brightness_range: Any, scale: bool = True) -> np.ndarray:
    """`apply_brightness_shift` by a factor drawn from `brightness_range` (a pair)."""
    if len(brightness_range) != 2:
        raise ValueError("`brightness_range should be tuple or list of two floats. Received: "
                         f"{brightness_range}")
    u = np.random.uniform(brightness_range[0], brightness_range[1])
    return apply_brightness_shift(x, u, scale)
