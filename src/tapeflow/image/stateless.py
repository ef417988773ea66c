"""`tf.image.stateless_random_*`: the random image ops driven by a stateless seed, drawing
exactly what TensorFlow draws (`stateless_random_uniform` with the same shape and range, whose
bits equal TensorFlow's), so the same seed transforms an image the same way."""

from __future__ import annotations

from typing import Any

from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import Tensor
from tapeflow.image.adjust import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
)
from tapeflow.ops import array_ops, math_ops
from tapeflow.ops.stateless_random import stateless_uniform


def _flip(image: Any, axis: int, seed: Any) -> Tensor:
    x = convert_to_tensor(image)
    if x.shape.rank == 3:
        flip = stateless_uniform([], seed, 0, 1.0)
        return math_ops.where(math_ops.less(flip, 0.5), array_ops.reverse(x, [axis]), x)
    batch = array_ops.shape(x)[0]
    flips = math_ops.cast(math_ops.round(array_ops.reshape(
        stateless_uniform(array_ops.stack([batch]), seed, 0, 1.0), [-1, 1, 1, 1])), x.dtype)
    return flips * array_ops.reverse(x, [axis + 1]) + (1 - flips) * x


def stateless_random_flip_left_right(image: Any, seed: Any) -> Tensor:
    """Mirror left-right when the seed's uniform draw is below 0.5 (per image in a batch)."""
    return _flip(image, 1, seed)


def stateless_random_flip_up_down(image: Any, seed: Any) -> Tensor:
    """Mirror up-down when the seed's uniform draw is below 0.5 (per image in a batch)."""
    return _flip(image, 0, seed)


def stateless_random_brightness(image: Any, max_delta: float, seed: Any) -> Tensor:
    """adjust_brightness by a delta drawn from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, stateless_uniform([], seed, -max_delta, max_delta))


def stateless_random_contrast(image: Any, lower: float, upper: float, seed: Any) -> Tensor:
    """adjust_contrast by a factor drawn from [lower, upper)."""
    if upper <= lower or lower < 0:
        raise ValueError("need 0 <= lower < upper")
    return adjust_contrast(image, stateless_uniform([], seed, lower, upper))


def stateless_random_saturation(image: Any, lower: float, upper: float, seed: Any) -> Tensor:
    """adjust_saturation by a factor drawn from [lower, upper)."""
    if upper <= lower or lower < 0:
        raise ValueError("need 0 <= lower < upper")
    return adjust_saturation(image, stateless_uniform([], seed, lower, upper))


def stateless_random_hue(image: Any, max_delta: float, seed: Any) -> Tensor:
    """adjust_hue by a delta drawn from [-max_delta, max_delta) (max_delta <= 0.5)."""
    if not 0 <= max_delta <= 0.5:
        raise ValueError("max_delta must be in the interval [0, 0.5].")
    return adjust_hue(image, stateless_uniform([], seed, -max_delta, max_delta))
