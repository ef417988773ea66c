"""Image quality and gradients: PSNR, SSIM, MS-SSIM, total variation, finite-difference and Sobel
gradients, with TensorFlow's formulas (so the numbers agree) in differentiable tapeflow ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import eager_scope
from tapeflow.framework.tensor import Tensor
from tapeflow.image.dtype import convert_image_dtype
from tapeflow.ops import array_ops, conv_ops, math_ops, nn_ops, reduce_ops

_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def _pair(a: Any, b: Any, what: str) -> tuple[Tensor, Tensor]:
    x, y = convert_to_tensor(a), convert_to_tensor(b)
    sx, sy = x.shape.as_list(), y.shape.as_list()
    if len(sx) < 3 or len(sx) != len(sy) or any(
            p is not None and q is not None and p != q for p, q in zip(sx[-3:], sy[-3:])):
        raise errors.InvalidArgumentError(
            None, what, f"{what}: images must have the same shape [..., height, width, "
                        f"channels], got {sx} ({x.dtype.name}) and {sy} ({y.dtype.name})\n"
                        f"{errors.user_line()}")
    return x, y


def _as_float_max(max_val: Any, dtype: _dtypes.DType) -> Tensor:
    return convert_image_dtype(math_ops.cast(convert_to_tensor(max_val), dtype), _dtypes.float32)


@export("image.psnr")
def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Tensor:
    """Peak signal-to-noise ratio in dB per image: 20 log10(max) - 10 log10(MSE)."""
    x, y = _pair(a, b, "psnr")
    peak = _as_float_max(max_val, x.dtype)
    x, y = convert_image_dtype(x, _dtypes.float32), convert_image_dtype(y, _dtypes.float32)
    mse = reduce_ops.reduce_mean(math_ops.squared_difference(x, y), axis=[-3, -2, -1])
    return (20.0 * math_ops.log(peak) / math_ops.log(convert_to_tensor(np.float32(10.0)))
            - np.float32(10 / np.log(10)) * math_ops.log(mse))


def _gaussian(size: int, sigma: float) -> np.ndarray:
    """TF's window: softmax over -(i^2 + j^2) / (2 sigma^2) on centred coordinates, float32."""
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / np.float32(2.0)
    g = np.square(coords) * (np.float32(-0.5) / np.square(np.float32(sigma)))
    g = (g[None, :] + g[:, None]).reshape(1, -1)
    with eager_scope():   # a constant of the graph being traced, if any
        return nn_ops.softmax(convert_to_tensor(g)).numpy().reshape(size, size, 1, 1)


def _blur(x: Tensor, window: np.ndarray) -> Tensor:
    """Each channel of [..., h, w, c] convolved (VALID) with the same window."""
    lead = x.shape.as_list()[:-3]
    h, w, c = x.shape.as_list()[-3:]
    planes = array_ops.reshape(array_ops.transpose(array_ops.reshape(x, [-1, h, w, c]),
                                                   [0, 3, 1, 2]), [-1, h, w, 1])
    out = conv_ops.conv2d(planes, window, strides=1, padding="VALID")
    oh, ow = out.shape.as_list()[1:3]
    out = array_ops.transpose(array_ops.reshape(out, [-1, c, oh, ow]), [0, 2, 3, 1])
    return array_ops.reshape(out, [-1 if d is None else d for d in lead] + [oh, ow, c])


def _ssim_per_channel(x: Tensor, y: Tensor, max_val: Tensor, filter_size: int,
                      filter_sigma: float, k1: float, k2: float) -> tuple[Tensor, Tensor]:
    h, w = x.shape.as_list()[-3:-1]
    if h is None or w is None:
        raise errors.InvalidArgumentError(
            None, "ssim", f"ssim: height and width must be known when tracing, got shape "
                          f"{x.shape.as_list()}\n{errors.user_line()}")
    if h < filter_size or w < filter_size:
        raise errors.InvalidArgumentError(
            None, "ssim", f"ssim: images of {h}x{w} are smaller than the {filter_size}x"
                          f"{filter_size} filter\n{errors.user_line()}")
    window = _gaussian(filter_size, filter_sigma)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mean_x, mean_y = _blur(x, window), _blur(y, window)
    num0 = mean_x * mean_y * 2.0
    den0 = math_ops.square(mean_x) + math_ops.square(mean_y)
    luminance = (num0 + c1) / (den0 + c1)
    num1 = _blur(x * y, window) * 2.0
    den1 = _blur(math_ops.square(x) + math_ops.square(y), window)
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    return (reduce_ops.reduce_mean(luminance * cs, axis=[-3, -2]),
            reduce_ops.reduce_mean(cs, axis=[-3, -2]))


def _prepare(img1: Any, img2: Any, max_val: Any, what: str) -> tuple[Tensor, Tensor, Tensor]:
    x, y = _pair(img1, img2, what)
    peak = _as_float_max(max_val, x.dtype)
    return convert_image_dtype(x, _dtypes.float32), convert_image_dtype(y, _dtypes.float32), peak


@export("image.ssim")
def ssim(img1: Any, img2: Any, max_val: Any, filter_size: int = 11, filter_sigma: float = 1.5,
         k1: float = 0.01, k2: float = 0.03) -> Tensor:
    """Structural similarity per image (Wang et al. 2004) with an 11x11 Gaussian window."""
    x, y, peak = _prepare(img1, img2, max_val, "ssim")
    per_channel, _ = _ssim_per_channel(x, y, peak, filter_size, filter_sigma, k1, k2)
    return reduce_ops.reduce_mean(per_channel, axis=[-1])


@export("image.ssim_multiscale")
def ssim_multiscale(img1: Any, img2: Any, max_val: Any, power_factors: Any = _MSSSIM_WEIGHTS,
                    filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
                    k2: float = 0.03) -> Tensor:
    """MS-SSIM: contrast-structure terms at successively halved scales (2x2 average pooling
    after symmetric padding to even sizes), weighted by `power_factors`."""
    x, y, peak = _prepare(img1, img2, max_val, "ssim_multiscale")
    lead = x.shape.as_list()[:-3]
    scores = []
    for k in range(len(power_factors)):
        if k > 0:
            h, w, c = x.shape.as_list()[-3:]
            pads = [[0, 0], [0, h % 2], [0, w % 2], [0, 0]]
            pooled = []
            for img in (x, y):
                flat = array_ops.reshape(img, [-1, h, w, c])
                if h % 2 or w % 2:
                    flat = array_ops.pad(flat, pads, mode="SYMMETRIC")
                flat = conv_ops.avg_pool2d(flat, ksize=2, strides=2, padding="VALID")
                pooled.append(array_ops.reshape(
                    flat, [-1 if d is None else d for d in lead] + flat.shape.as_list()[1:]))
            x, y = pooled
        per_channel, cs = _ssim_per_channel(x, y, peak, filter_size, filter_sigma, k1, k2)
        scores.append(nn_ops.relu(cs))
    scores[-1] = nn_ops.relu(per_channel)
    stacked = array_ops.stack(scores, axis=-1)
    weights = convert_to_tensor(np.asarray(power_factors, np.float32))
    return reduce_ops.reduce_mean(reduce_ops.reduce_prod(stacked ** weights, axis=[-1]),
                                  axis=[-1])


@export("image.total_variation")
def total_variation(images: Any, name: str | None = None) -> Tensor:
    """Sum of absolute differences between neighbouring pixels (per image for a batch)."""
    x = convert_to_tensor(images)
    if x.shape.rank == 3:
        dy, dx, axes = x[1:, :, :] - x[:-1, :, :], x[:, 1:, :] - x[:, :-1, :], None
    elif x.shape.rank == 4:
        dy, dx = x[:, 1:, :, :] - x[:, :-1, :, :], x[:, :, 1:, :] - x[:, :, :-1, :]
        axes = [1, 2, 3]
    else:
        raise ValueError(f"total_variation: 'images' must be either 3 or 4-dimensional, got "
                         f"shape {x.shape.as_list()}")
    return (reduce_ops.reduce_sum(math_ops.abs(dy), axis=axes)
            + reduce_ops.reduce_sum(math_ops.abs(dx), axis=axes))


@export("image.image_gradients")
def image_gradients(image: Any) -> tuple[Tensor, Tensor]:
    """(dy, dx): forward differences of a [batch, h, w, d] image, zero in the last row/column."""
    x = convert_to_tensor(image)
    if x.shape.rank != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not "
                         f"{x.shape.as_list()}")
    dy = array_ops.pad(x[:, 1:, :, :] - x[:, :-1, :, :], [[0, 0], [0, 1], [0, 0], [0, 0]])
    dx = array_ops.pad(x[:, :, 1:, :] - x[:, :, :-1, :], [[0, 0], [0, 0], [0, 1], [0, 0]])
    return dy, dx


@export("image.sobel_edges")
def sobel_edges(image: Any) -> Tensor:
    """Sobel responses [batch, h, w, d, 2] (vertical, horizontal), reflect-padded borders."""
    x = convert_to_tensor(image)
    if x.shape.rank != 4:
        raise ValueError(f"sobel_edges expects a 4D tensor [batch_size, h, w, d], not "
                         f"{x.shape.as_list()}")
    kernels = np.array([[[-1, -2, -1], [0, 0, 0], [1, 2, 1]],
                        [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]], x.dtype._np)
    window = np.transpose(kernels, (1, 2, 0))[:, :, None, :]         # [3, 3, 1, 2]
    b, h, w, d = x.shape.as_list()
    padded = array_ops.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    planes = array_ops.reshape(array_ops.transpose(padded, [0, 3, 1, 2]), [-1, h + 2, w + 2, 1])
    out = conv_ops.conv2d(planes, window, strides=1, padding="VALID")   # [b*d, h, w, 2]
    out = array_ops.reshape(out, [-1 if b is None else b, d, h, w, 2])
    return array_ops.transpose(out, [0, 2, 3, 1, 4])


