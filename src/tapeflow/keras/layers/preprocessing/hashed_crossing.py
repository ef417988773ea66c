"""``tf.keras.layers.HashedCrossing``: the cross of two or more categorical features hashed
into `num_bins` bins (``tf.sparse.cross_hashed``: TF's FarmHash fingerprints, so bins equal
TensorFlow's), as an int64 bin index or a one-hot vector."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.framework import dtypes as _dtypes
from tapeflow.keras.engine.base_layer import Layer

_MODES = ("int", "one_hot")


class HashedCrossing(Layer):
    """Cross scalar features given as a tuple of tensors of equal shape ``[]``, ``[batch]``
    or ``[batch, 1]`` (integers or strings): ``output_mode='int'`` gives the bin of each
    crossed value in that shape; ``'one_hot'`` gives ``[..., num_bins]`` floats (the size-1
    axis folded in)."""

    def __init__(self, num_bins: int, output_mode: str = "int", sparse: bool = False,
                 **kwargs: Any):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(**kwargs)
        if output_mode == "int" and not _dtypes.as_dtype(self.compute_dtype).is_integer:
            raise ValueError("When `output_mode='int'`, `dtype` should be an integer type. "
                             f"Received: dtype={kwargs['dtype']}")
        if output_mode not in _MODES:
            raise ValueError(f"Unknown value for `output_mode`. Allowed values are: {_MODES}. "
                             f"Received: output_mode={output_mode}")
        if sparse:
            raise NotImplementedError("HashedCrossing: sparse=True outputs are not supported "
                                      "in tapeflow yet; use sparse=False")
        self.num_bins, self.output_mode, self.sparse = num_bins, output_mode, sparse

    def call(self, inputs: Any) -> Any:
        _check_count(inputs)
        inputs = [tf.convert_to_tensor(x) for x in inputs]
        _check_shapes_and_types(inputs)
        rank = inputs[0].shape.rank
        columns = [tf.reshape(x, [-1, 1]) for x in inputs]  # cross_hashed takes [batch, n]
        bins = tf.sparse.to_dense(tf.sparse.cross_hashed(columns, self.num_bins))
        if self.output_mode == "int":
            shape = {0: [], 1: [-1]}.get(rank, [-1, 1])
            return tf.cast(tf.reshape(bins, shape), self.compute_dtype)
        flat = tf.reshape(bins, [] if rank == 0 else [-1])
        return tf.one_hot(flat, self.num_bins, dtype=self.compute_dtype)

    def compute_output_shape(self, input_shapes: Any) -> tf.TensorShape:
        _check_count(input_shapes)
        shape = tf.TensorShape(input_shapes[0]).as_list()
        if self.output_mode == "int":
            return tf.TensorShape(shape)
        if shape and shape[-1] == 1:
            shape = shape[:-1]
        return tf.TensorShape(shape + [self.num_bins])

    def get_config(self) -> dict:
        return {**super().get_config(), "num_bins": self.num_bins,
                "output_mode": self.output_mode, "sparse": self.sparse}


def _check_count(inputs: Any) -> None:
    if not isinstance(inputs, (list, tuple)):
        raise ValueError("`HashedCrossing` should be called on a list or tuple of inputs. "
                         f"Received: inputs={inputs}")
    if len(inputs) < 2:
        raise ValueError("`HashedCrossing` should be called on at least two inputs. "
                         f"Received: inputs={inputs}")


def _check_shapes_and_types(inputs: list) -> None:
    first = inputs[0].shape.as_list()
    if len(first) > 2 or (len(first) == 2 and first[-1] != 1):
        raise ValueError("All `HashedCrossing` inputs should have shape `[]`, `[batch_size]` "
                         f"or `[batch_size, 1]`. Received: inputs={inputs}")
    if not all(x.shape.as_list() == first for x in inputs[1:]):
        raise ValueError(f"All `HashedCrossing` inputs should have equal shape. Received: "
                         f"inputs={inputs}")
    if not all(x.dtype.is_integer or x.dtype == tf.string for x in inputs):
        raise ValueError("All `HashedCrossing` inputs should have an integer or string dtype. "
                         f"Received: inputs={inputs}")
