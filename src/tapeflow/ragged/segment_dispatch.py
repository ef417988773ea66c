"""Segment reductions of RaggedTensor data.

``unsorted_segment_<op>(rt, ids, n)`` combines the rows of each segment position by position,
as TensorFlow does: output row j is as long as the longest row with id j, and its entry k
reduces entry k of those rows that have one (a mean divides by how many do). Each flat value
gets the key (start of its output row + its position), and the dense segment op on the flat
values does the rest, so gradients reach the values. The sorted ``segment_*`` functions raise
ValueError on ragged data, as TF does.
"""

from __future__ import annotations

from typing import Any

from tapeflow.framework.composite import dispatch_for_api
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import gather_ops, math_ops, segment_ops
from tapeflow.ragged import primitives as prim
from tapeflow.ragged.tensor import RaggedTensor, _lengths_to_splits

_UNSORTED = (segment_ops.unsorted_segment_sum, segment_ops.unsorted_segment_max,
             segment_ops.unsorted_segment_min, segment_ops.unsorted_segment_prod,
             segment_ops.unsorted_segment_mean, segment_ops.unsorted_segment_sqrt_n)
_SORTED = (segment_ops.segment_sum, segment_ops.segment_max, segment_ops.segment_min,
           segment_ops.segment_prod, segment_ops.segment_mean)


def _unsorted(api: Any) -> None:
    @dispatch_for_api(api, RaggedTensor)
    def handler(data: Any, segment_ids: Any, num_segments: Any,
                name: str | None = None) -> RaggedTensor:
        if not isinstance(data, RaggedTensor) or data.ragged_rank != 1:
            raise NotImplementedError(f"tf.math.{api.__name__} with ragged segment ids or data "
                                      f"of ragged_rank > 1")
        dtype = data.row_splits.dtype
        ids = math_ops.cast(segment_ids if isinstance(segment_ids, Tensor)
                            else convert_to_tensor(segment_ids), dtype)
        n = math_ops.cast(num_segments if isinstance(num_segments, Tensor)
                          else convert_to_tensor(num_segments), dtype)
        lengths = math_ops.maximum(segment_ops.unsorted_segment_max(data.row_lengths(), ids, n),
                                   0)  # an empty segment is an empty row
        splits = _lengths_to_splits(lengths)
        rows = data.value_rowids()
        key = gather_ops.gather(splits, gather_ops.gather(ids, rows)) + \
            apply(prim.position_kernel, data.row_splits)
        values = api(data.values, key, splits[-1])
        return RaggedTensor.from_row_splits(values, splits, validate=False)


def _sorted(api: Any) -> None:
    @dispatch_for_api(api, RaggedTensor)
    def handler(data: Any, segment_ids: Any, name: str | None = None) -> Any:
        raise ValueError(f"tf.math.{api.__name__} does not take RaggedTensor arguments (TF "
                         f"converts them to dense tensors and fails); use "
                         f"unsorted_{api.__name__} for ragged data.")


for _api in _UNSORTED:
    _unsorted(_api)
for _api in _SORTED:
    _sorted(_api)
