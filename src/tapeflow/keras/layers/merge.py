"""Merge layers: combine a list of tensors (Concatenate, Add, Subtract, Multiply, Dot...)."""

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

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """A step is kept where every masked input keeps it (Keras's elementwise merge)."""
        if mask is None or all(m is None for m in mask):
            return None
        kept = [tf.cast(m, tf.bool) for m in mask if m is not None]
        out = kept[0]
        for m in kept[1:]:
            out = tf.logical_and(out, m)
        return out


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

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """Masks joined along `axis` (unmasked inputs count as all kept), then a step is kept
        where all its features are, as Keras's Concatenate."""
        if mask is None or all(m is None for m in mask):
            return None
        parts = []
        for x, m in zip(inputs, mask):
            if m is None:
                parts.append(tf.ones_like(x, dtype=tf.bool))
            elif len(m.shape) < len(x.shape):
                parts.append(tf.expand_dims(tf.cast(m, tf.bool), -1))
            else:
                parts.append(tf.cast(m, tf.bool))
        return tf.reduce_all(tf.concat(parts, axis=self.axis), axis=-1)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


class Dot(_Merge):
    """Per-sample dot product of two inputs along `axes` (an int, or one axis per input);
    ``normalize=True`` L2-normalizes both first (cosine similarity). [b, n] . [b, n] gives
    [b, 1]; [b, n, d] . [b, m, d] with ``axes=2`` gives [b, n, m] (Keras's batch_dot)."""

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(axes, int):
            axes = (axes, axes)
        if not isinstance(axes, (list, tuple)) or len(axes) != 2 or not all(
                isinstance(a, int) for a in axes):
            raise layer_error(f"Dot: `axes` must be an int or a list of 2 ints, got {axes!r}")
        self.axes, self.normalize = tuple(axes), bool(normalize)

    def _axes(self, shapes: list) -> tuple[int, int]:
        ranks = [s.rank for s in shapes]
        if len(shapes) != 2 or None in ranks or min(ranks) < 2:
            raise layer_error(f"Dot {self.name!r}: expects 2 inputs of known rank >= 2, got "
                             f"shapes {[str(s) for s in shapes]}")
        axes = tuple(a % r for a, r in zip(self.axes, ranks))
        if 0 in axes:
            raise layer_error(f"Dot {self.name!r}: cannot contract the batch axis (axes "
                             f"{self.axes})")
        a, b = (s[ax] for s, ax in zip(shapes, axes))
        if a is not None and b is not None and a != b:
            raise layer_error(f"Dot {self.name!r}: dimension incompatibility {a} != {b} along "
                             f"axes {self.axes} of shapes {[str(s) for s in shapes]}")
        return axes

    def build(self, input_shape: Any) -> None:
        self._axes([tf.TensorShape(s) for s in self._check(input_shape)])
        self.built = True

    def _merge(self, inputs: list) -> Any:
        x, y = (tf.convert_to_tensor(t) for t in inputs)
        ax, ay = self._axes([x.shape, y.shape])
        if self.normalize:
            x, y = tf.nn.l2_normalize(x, axis=ax), tf.nn.l2_normalize(y, axis=ay)
        letters = iter("cdefghijklmnopqrstuvwxyz")
        xs = ["a"] + [next(letters) for _ in range(x.shape.rank - 1)]
        ys = ["a"] + [next(letters) for _ in range(y.shape.rank - 1)]
        ys[ay] = xs[ax] = "b"
        out = [c for c in xs if c != "b"] + [c for c in ys[1:] if c != "b"]
        result = tf.einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
        return tf.expand_dims(result, -1) if len(out) == 1 else result

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        shapes = [tf.TensorShape(s) for s in self._check(input_shape)]
        ax, ay = self._axes(shapes)
        first, second = shapes[0].as_list(), shapes[1].as_list()
        dims = first[:ax] + first[ax + 1:] + second[1:ay] + second[ay + 1:]
        return tf.TensorShape(dims + [1] if len(dims) == 1 else dims)

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def dot(inputs: list, axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """Functional form of ``Dot``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)


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
