"""``tf.ragged``: tensors whose rows have different lengths (see ragged/tensor.py)."""

from tapeflow.ragged import (  # noqa: F401  (register tf.nn.*, segment ops on RaggedTensor)
    array_dispatch,
    nn_dispatch,
    segment_dispatch,
)
from tapeflow.ragged.api import (
    boolean_mask,
    constant,
    map_flat_values,
    range,
    row_splits_to_segment_ids,
    segment_ids_to_row_splits,
    stack,
)
from tapeflow.ragged.array_dispatch import stack_dynamic_partitions
from tapeflow.ragged.dynamic_shape import DynamicRaggedShape, RowPartition
from tapeflow.ragged.tensor import RaggedTensor, RaggedTensorSpec

__all__ = ["DynamicRaggedShape", "RaggedTensor", "RaggedTensorSpec", "RowPartition",
           "boolean_mask", "constant", "map_flat_values", "range",
           "row_splits_to_segment_ids", "segment_ids_to_row_splits", "stack",
           "stack_dynamic_partitions"]
