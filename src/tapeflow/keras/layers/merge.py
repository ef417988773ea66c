"""Merge layers: combine a list of tensors (Concatenate, Add, Subtract, Multiply, Average...)."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error


class _Merge(Layer):
    """Shared checks: the inputs are a list of at least two tensors."""

    def _check(self, inputs: Any) -> list:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise layer_error(f"{type(self).__name__} {self.name!r}: expects a list of at least "
                             f"2 inputs, got {inputs!r}")
        return list(inputs)

    def _merge(self, inputs: list) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _merge(inputs)")

    def call(self, inputs: Any):
        return self._merge(self._check(inputs))


class _ElementwiseMerge(_Merge):
    """Elementwise merges need inputs that broadcast to one shape."""

    def build(self, input_shape: Any) -> None:
        shapes = [tf.TensorShape(s) for s in self._check(input_shape)]
        ranks = {s.rank for s in shapes}
        if len(ranks) == 1 and None not in ranks:
            for dims in zip(*(s.as_list() for s in shapes)):
                known = {d for d in dims if d not in (None, 1)}
                if len(known) > 1:
                    raise layer_error(f"{type(self).__name__} {self.name!r}: inputs must have "
                                     f"matching shapes, got {[str(s) for s in shapes]}")
        self.built = True


class Add(_ElementwiseMerge):
    """Elementwise sum of the inputs (residual connections)."""

    def _merge(self, inputs: list) -> Any:
        return tf.math.add_n(inputs)


class Subtract(_ElementwiseMerge):
    """inputs[0] - inputs[1] (exactly two inputs)."""

    def _merge(self, inputs: list) -> Any:
        if len(inputs) != 2:
            raise layer_error(f"Subtract {self.name!r}: expects exactly 2 inputs, got "
                             f"{len(inputs)}")
        return inputs[0] - inputs[1]


class Multiply(_ElementwiseMerge):
    """Elementwise product of the inputs (gating)."""

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = out * x
        return out


class Average(_ElementwiseMerge):
    """Elementwise mean of the inputs."""

    def _merge(self, inputs: list) -> Any:
        return tf.math.add_n(inputs) / float(len(inputs))


class Maximum(_ElementwiseMerge):
    """Elementwise maximum of the inputs."""

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = tf.math.maximum(out, x)
        return out


class Minimum(_ElementwiseMerge):
    """Elementwise minimum of the inputs."""

    def _merge(self, inputs: list) -> Any:
        out = inputs[0]
        for x in inputs[1:]:
            out = tf.math.minimum(out, x)
        return out


class Concatenate(_Merge):
    """Join the inputs along `axis` (the DenseNet feature concatenation)."""

    def __init__(self, axis: int = -1, **kwargs: Any):
        super().__init__(**kwargs)
        self.axis = int(axis)

    def build(self, input_shape: Any) -> None:
        shapes = [tf.TensorShape(s) for s in self._check(input_shape)]
        ranks = {s.rank for s in shapes}
        if len(ranks) > 1:
            raise layer_error(f"Concatenate {self.name!r}: inputs must have the same rank, got "
                             f"shapes {[str(s) for s in shapes]}")
        rank = ranks.pop()
        if rank is not None:
            axis = self.axis % rank
            for i, dims in enumerate(zip(*(s.as_list() for s in shapes))):
                known = {d for d in dims if d is not None}
                if i != axis and len(known) > 1:
                    raise layer_error(
                        f"Concatenate {self.name!r}: a Concatenate layer requires inputs with "
                        f"matching shapes except for the concatenation axis {self.axis}. Got "
                        f"inputs shapes: {[str(s) for s in shapes]}")
        self.built = True

    def _merge(self, inputs: list) -> Any:
        return tf.concat(inputs, axis=self.axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


def add(inputs: list, **kwargs: Any) -> Any:
    """Functional form of ``Add``."""
    return Add(**kwargs)(inputs)


def subtract(inputs: list, **kwargs: Any) -> Any:
    """Functional form of ``Subtract``."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list, **kwargs: Any) -> Any:
    """Functional form of ``Multiply``."""
    return Multiply(**kwargs)(inputs)


def average(inputs: list, **kwargs: Any) -> Any:
    """Functional form of ``Average``."""
    return Average(**kwargs)(inputs)


def maximum(inputs: list, **kwargs: Any) -> Any:
    """Functional form of ``Maximum``."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list, **kwargs: Any) -> Any:
    """Functional form of ``Minimum``."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: list, axis: int = -1, **kwargs: Any) -> Any:
    """Functional form of ``Concatenate``."""
    return Concatenate(axis=axis, **kwargs)(inputs)
