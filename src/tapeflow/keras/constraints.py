"""Weight constraints (``tf.keras.constraints``): projections applied to a weight after each
optimizer update (``Optimizer.apply_gradients`` assigns ``constraint(var)``).

Keras 2's formulas, with its epsilon 1e-7 in the denominators: ``MaxNorm`` rescales columns
whose norm along `axis` exceeds `max_value`, ``UnitNorm`` scales them to norm 1, ``MinMaxNorm``
moves their norm into [min_value, max_value] at `rate`, ``NonNeg`` zeroes negative entries.
A Conv2D kernel (h, w, in, out) uses ``axis=[0, 1, 2]`` to constrain each filter;
``RadialConstraint`` makes each of its (h, w) slices radially symmetric.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras.identifiers import Registry

EPSILON = 1e-7


class Constraint:
    """Base class: ``__call__(w)`` returns the projected weight (the identity here)."""

    def __call__(self, w: Any):
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Constraint:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _norms(w: Any, axis: Any):
    return tf.sqrt(tf.reduce_sum(tf.square(w), axis=axis, keepdims=True))


def _axis(axis: Any) -> Any:
    return list(axis) if isinstance(axis, (list, tuple)) else int(axis)


class MaxNorm(Constraint):
    """Columns (slices along `axis`) of norm above `max_value` are scaled down to it."""

    def __init__(self, max_value: float = 2, axis: Any = 0):
        self.max_value, self.axis = float(max_value), _axis(axis)

    def __call__(self, w: Any):
        w = tf.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = tf.clip_by_value(norms, 0.0, self.max_value)
        return w * (desired / (EPSILON + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Negative entries become 0."""

    def __call__(self, w: Any):
        w = tf.convert_to_tensor(w)
        return w * tf.cast(w >= 0.0, w.dtype)


class UnitNorm(Constraint):
    """Columns (slices along `axis`) scaled to norm 1."""

    def __init__(self, axis: Any = 0):
        self.axis = _axis(axis)

    def __call__(self, w: Any):
        w = tf.convert_to_tensor(w)
        return w / (EPSILON + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Column norms moved into [min_value, max_value]; `rate` < 1 moves them part way."""

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis: Any = 0):
        if not 0.0 <= float(min_value) <= float(max_value):
            raise ValueError(f"MinMaxNorm: need 0 <= min_value <= max_value, got {min_value} and "
                             f"{max_value}")
        self.min_value, self.max_value = float(min_value), float(max_value)
        self.rate, self.axis = float(rate), _axis(axis)

    def __call__(self, w: Any):
        w = tf.convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = (self.rate * tf.clip_by_value(norms, self.min_value, self.max_value)
                   + (1.0 - self.rate) * norms)
        return w * (desired / (EPSILON + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


def _radial_sources(size: int) -> np.ndarray:
    """For each (row, col) of a size x size kernel, the diagonal entry Keras copies there:
    ring j around the centre (Chebyshev distance) takes ``kernel[q, q]`` with q = s - 1 + j
    for an odd size 2s + 1, and q = s - 1 (centre 2x2) or s + j (j >= 1) for an even 2s."""
    half = size // 2
    pos = np.arange(size)
    if size % 2:
        ring = np.abs(pos - half)
        rings = np.maximum(ring[:, None], ring[None, :])
        return half - 1 + rings
    ring = np.where(pos < half, half - 1 - pos, pos - half)
    rings = np.maximum(ring[:, None], ring[None, :])
    return np.where(rings == 0, half - 1, half + rings)


class RadialConstraint(Constraint):
    """Makes every (height, width) slice of a Conv2D kernel (h, w, in, out) radially
    symmetric, as tf-keras does: each ring around the centre takes one value of the kernel's
    diagonal (see ``_radial_sources``). Kernels must be square."""

    def __call__(self, w: Any):
        w = tf.convert_to_tensor(w)
        shape = w.shape
        if shape.rank != 4:
            raise ValueError("The weight tensor must have rank 4. Received weight tensor with "
                             f"shape: {shape}")
        height, width, channels, kernels = shape.as_list()
        if height != width:
            raise ValueError(f"RadialConstraint: the kernel must be square (height == width), "
                             f"got shape {shape}")
        sources = _radial_sources(height)
        flat = tf.reshape(w, [height * width, channels, kernels])
        picked = tf.gather(flat, (sources * width + sources).reshape(-1))
        return tf.reshape(picked, [height, width, channels, kernels])


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
radial_constraint = RadialConstraint
_BY_NAME = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm,
            "MinMaxNorm": MinMaxNorm, "RadialConstraint": RadialConstraint,
            "max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm, "radial_constraint": RadialConstraint}


_REGISTRY = Registry("constraint", _BY_NAME)
serialize, deserialize, get = _REGISTRY.serialize, _REGISTRY.deserialize, _REGISTRY.get
