"""Weight constraints (``tf.keras.constraints``): projections applied to a weight after each
optimizer update (``Optimizer.apply_gradients`` assigns ``constraint(var)``).

Keras 2's formulas, with its epsilon 1e-7 in the denominators: ``MaxNorm`` rescales columns
whose norm along `axis` exceeds `max_value`, ``UnitNorm`` scales them to norm 1, ``MinMaxNorm``
moves their norm into [min_value, max_value] at `rate`, ``NonNeg`` zeroes negative entries.
A Conv2D kernel (h, w, in, out) uses ``axis=[0, 1, 2]`` to constrain each filter.
"""

from __future__ import annotations

from typing import Any

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


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
_BY_NAME = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm,
            "MinMaxNorm": MinMaxNorm, "max_norm": MaxNorm, "non_neg": NonNeg,
            "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}


_REGISTRY = Registry("constraint", _BY_NAME)
serialize, deserialize, get = _REGISTRY.serialize, _REGISTRY.deserialize, _REGISTRY.get
