"""Weight regularizers (``tf.keras.regularizers``): callables turning a weight into a loss term.

``tf.keras.regularizers.l2(0.04)(W)`` is ``0.04 * sum(W**2)``; with ``W = ones((2, 2))`` that is
0.16 (seed 004). Layers call them on their weights and collect the results in ``layer.losses``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras.identifiers import Registry


def _factor(value: Any, name: str) -> float:
    value = float(value)
    if value < 0 or value != value:
        raise ValueError(f"Regularizer: `{name}` must be a non-negative number, got {value}")
    return value


class Regularizer:
    """Base class: ``__call__(x)`` returns a scalar penalty tensor."""

    def __call__(self, x: Any):
        return tf.constant(0.0)

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Regularizer:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _as_tensor(x: Any):
    """Tensors and variables as they are (ops on a Variable keep the tape connected to it)."""
    return x if tf.is_tensor(x) else tf.convert_to_tensor(x)


def _l1_term(factor: float, x):
    return factor * tf.reduce_sum(tf.abs(x))


def _l2_term(factor: float, x):
    return factor * tf.reduce_sum(x * x)


class L1(Regularizer):
    """l1 * sum(|x|): pushes weights to exactly zero (sparsity)."""

    def __init__(self, l1: float = 0.01):
        self.l1 = _factor(l1, "l1")

    def __call__(self, x: Any):
        return _l1_term(self.l1, _as_tensor(x))

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(Regularizer):
    """l2 * sum(x^2): weight decay."""

    def __init__(self, l2: float = 0.01):
        self.l2 = _factor(l2, "l2")

    def __call__(self, x: Any):
        return _l2_term(self.l2, _as_tensor(x))

    def get_config(self) -> dict:
        return {"l2": self.l2}


class L1L2(Regularizer):
    """l1 * sum(|x|) + l2 * sum(x^2)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0):
        self.l1 = _factor(l1, "l1")
        self.l2 = _factor(l2, "l2")

    def __call__(self, x: Any):
        x = _as_tensor(x)
        terms = []
        if self.l1:
            terms.append(_l1_term(self.l1, x))
        if self.l2:
            terms.append(_l2_term(self.l2, x))
        if not terms:
            return tf.zeros((), dtype=x.dtype)
        return terms[0] + terms[1] if len(terms) == 2 else terms[0]

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (``mode="rows"``) or columns of a 2-D weight towards orthogonality:
    ``factor * 0.5 * mean |cos|`` over the pairs of distinct unit-normalised rows/columns
    (the sum of |off-diagonal| entries of their Gram matrix over ``n (n - 1) / 2``)."""

    def __init__(self, factor: float = 0.01, mode: str = "rows"):
        # stored as Keras stores it (a float32 number), so configs match tf-keras's
        self.factor = float(np.float32(_factor(factor, "factor")))
        if mode not in {"rows", "columns"}:
            raise ValueError('Invalid value for argument `mode`. Expected one of {"rows", '
                             f'"columns"}}. Received: mode={mode}')
        self.mode = mode

    def __call__(self, x: Any):
        x = _as_tensor(x)
        if x.shape.rank != 2:
            raise ValueError("Inputs to OrthogonalRegularizer must have rank 2. Received: "
                             f"inputs.shape == {x.shape}")
        if self.mode == "rows":
            unit = tf.math.l2_normalize(x, axis=1)
            gram, size = tf.matmul(unit, unit, transpose_b=True), x.shape[0]
        else:
            unit = tf.math.l2_normalize(x, axis=0)
            gram, size = tf.matmul(unit, unit, transpose_a=True), x.shape[1]
        off_diagonal = gram * (1.0 - tf.eye(size, dtype=x.dtype))
        pairs = size * (size - 1.0) / 2.0
        return self.factor * 0.5 * tf.reduce_sum(tf.abs(off_diagonal)) / pairs

    def get_config(self) -> dict:
        return {"factor": self.factor, "mode": self.mode}


def l1(l1: float = 0.01) -> L1:  # noqa: E741 - Keras's name
    """``L1(l1)``."""
    return L1(l1)


def l2(l2: float = 0.01) -> L2:
    """``L2(l2)``."""
    return L2(l2)


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:  # noqa: E741
    """``L1L2(l1, l2)`` with Keras's defaults for the function form (0.01 each)."""
    return L1L2(l1, l2)


orthogonal_regularizer = OrthogonalRegularizer
_BY_NAME = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2,
            "OrthogonalRegularizer": OrthogonalRegularizer,
            "orthogonal_regularizer": OrthogonalRegularizer}


_REGISTRY = Registry("regularizer", _BY_NAME)
serialize, deserialize, get = _REGISTRY.serialize, _REGISTRY.deserialize, _REGISTRY.get
