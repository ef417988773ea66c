"""``tf.keras.Input`` and ``InputLayer``: where a functional model's data enters."""

from __future__ import annotations

from typing import Any

from tapeflow.keras import backend
from tapeflow.keras.engine import (  # noqa: F401  (ops on KerasTensors record layers)
    op_lambda,
    ragged_ops,
)
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.keras_tensor import (
    KerasTensor,
    Node,
    RaggedKerasTensor,
    SparseKerasTensor,
)
from tapeflow.sparse.tensor import SparseTensorSpec


class InputLayer(Layer):
    """The layer behind ``tf.keras.Input``: holds the model's entry point, no weights."""

    def __init__(self, input_shape: Any = None, batch_size: int | None = None, dtype: Any = None,
                 input_tensor: Any = None, sparse: bool | None = None, name: str | None = None,
                 ragged: bool | None = None, type_spec: Any = None, **kwargs: Any):
        batch_input_shape = kwargs.pop("batch_input_shape", None)
        spec_rank = getattr(type_spec, "ragged_rank", None)
        if sparse and ragged:
            raise ValueError("Cannot set both sparse and ragged to True in a Keras input.")
        sparse = bool(sparse) or isinstance(type_spec, SparseTensorSpec)
        if type_spec is not None:  # tf.keras.Input(type_spec=tf.RaggedTensorSpec(...))
            batch_input_shape = tuple(type_spec.shape.as_list())
            dtype = dtype or type_spec.dtype
            ragged = ragged or spec_rank is not None
        if name is None:
            name = backend.unique_object_name("input", zero_based=False)
        if batch_input_shape is None:
            if input_shape is None:
                if input_tensor is None:
                    raise ValueError("InputLayer needs `input_shape`, `batch_input_shape` or "
                                     "`input_tensor`.")
                batch_input_shape = input_tensor.shape.as_tuple()
            else:
                batch_input_shape = (batch_size,) + tuple(input_shape)
        super().__init__(name=name, dtype=dtype or backend.floatx(), **kwargs)
        self._batch_input_shape = tuple(batch_input_shape)
        self.built = True
        # as Keras: the ragged rank is the position of the last unknown dimension
        self._ragged_rank = (spec_rank if spec_rank is not None else max(
            (i for i, d in enumerate(self._batch_input_shape) if d is None and i > 0),
            default=0)) if ragged else 0
        self._sparse = sparse
        if sparse:
            tensor: KerasTensor = SparseKerasTensor(self._batch_input_shape, self._dtype,
                                                    name=name)
        elif self._ragged_rank:
            tensor = RaggedKerasTensor(self._batch_input_shape, self._dtype,
                                                    name=name, ragged_rank=self._ragged_rank)
        else:
            tensor = KerasTensor(self._batch_input_shape, self._dtype, name=name)
        Node(self, None, (), {}, tensor)
        self.is_placeholder = True

    def get_config(self) -> dict:
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype,
                "sparse": self._sparse, "ragged": bool(self._ragged_rank), "name": self._name}

    @property
    def output_shape(self) -> list:
        """Keras shows an input layer's shape as a one-element list: ``[(None, 784)]``."""
        return [self._batch_input_shape]


def Input(shape: Any = None, batch_size: int | None = None, name: str | None = None,  # noqa: N802
          dtype: Any = None, sparse: bool | None = None, tensor: Any = None,
          ragged: bool | None = None, type_spec: Any = None, batch_shape: Any = None,
          **kwargs: Any) -> KerasTensor:
    """A symbolic input of `shape` (batch dimension excluded) for the functional API."""
    if shape is None and batch_shape is None and tensor is None and type_spec is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` "
                         "argument. Note that `shape` does not include the batch dimension.")
    if isinstance(shape, int):
        shape = (shape,)
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse,
                       name=name, ragged=ragged, input_tensor=tensor, type_spec=type_spec,
                       batch_input_shape=batch_shape, **kwargs)
    return layer._inbound_nodes[0].outputs
