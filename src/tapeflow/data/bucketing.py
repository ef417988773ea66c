"""``Dataset.bucket_by_sequence_length``: batch elements of similar length together.

Each element's length (``element_length_func``) picks a bucket by ``bucket_boundaries`` (bucket i
holds lengths in [boundaries[i-1], boundaries[i])); a bucket is emitted as a padded batch when it
holds its ``bucket_batch_sizes[i]`` elements, and what is left is emitted at the end in bucket
order (unless ``drop_remainder``). Padding follows ``padded_batch`` (to the longest element, or to
the bucket's boundary - 1 with ``pad_to_bucket_boundary``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from tapeflow.data import structure
from tapeflow.data.batching import PaddedBatchDataset, stack
from tapeflow.data.dataset import UNKNOWN, Dataset
from tapeflow.framework.shapes import TensorShape


class BucketBySequenceLengthDataset(PaddedBatchDataset):
    def __init__(self, input_dataset: Dataset, element_length_func: Callable,
                 bucket_boundaries: list, bucket_batch_sizes: list, padded_shapes: Any,
                 padding_values: Any, pad_to_bucket_boundary: bool, no_padding: bool,
                 drop_remainder: bool):
        if len(bucket_batch_sizes) != len(bucket_boundaries) + 1:
            raise ValueError(f"bucket_by_sequence_length: len(bucket_batch_sizes) must be "
                             f"len(bucket_boundaries) + 1, got {len(bucket_batch_sizes)} and "
                             f"{len(bucket_boundaries)}")
        if list(bucket_boundaries) != sorted(bucket_boundaries):
            raise ValueError("bucket_by_sequence_length: bucket_boundaries must be sorted")
        super().__init__(input_dataset, max(bucket_batch_sizes), padded_shapes, padding_values,
                         drop_remainder)
        self._length = element_length_func
        self._boundaries = [int(b) for b in bucket_boundaries]
        self._sizes = [int(s) for s in bucket_batch_sizes]
        self._to_boundary = pad_to_bucket_boundary
        self._no_padding = no_padding

    def _bucket(self, element: Any) -> int:
        user = structure.to_user(element)
        args = user if isinstance(user, tuple) and not hasattr(user, "_fields") else (user,)
        length = self._length(*args)
        return bisect.bisect_right(self._boundaries, int(getattr(length, "numpy",
                                                                 lambda: length)()))

    def _emit(self, elements: list, bucket: int) -> Any:
        if self._no_padding:
            return stack(elements)
        targets = self._targets(elements[0])
        if self._to_boundary:
            if bucket == len(self._boundaries):
                raise ValueError("bucket_by_sequence_length: pad_to_bucket_boundary needs every "
                                 "length below the last boundary")
            width = self._boundaries[bucket] - 1
            targets = [TensorShape([width] + [None] * (e.ndim - 1)) if t is None and e.ndim
                       else t for t, e in zip(targets, structure.flatten(elements[0]))]
        return self._pad(elements, targets, self._pads(elements[0]))

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        buckets: list[list] = [[] for _ in self._sizes]
        source = self._inputs[0]._iterate(ctx)
        try:
            for element in source:
                b = self._bucket(element)
                buckets[b].append(element)
                if len(buckets[b]) == self._sizes[b]:
                    yield self._emit(buckets[b], b)
                    buckets[b] = []
            if not self._drop_remainder:
                for b, pending in enumerate(buckets):
                    if pending:
                        yield self._emit(pending, b)
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        spec = structure.batched_spec(self._inputs[0].element_spec, None)
        return structure.map_structure(
            lambda s: type(s)(TensorShape([None] * s.shape.rank) if s.shape.rank else s.shape,
                              s.dtype), spec)

    def _cardinality(self) -> int:
        return UNKNOWN
