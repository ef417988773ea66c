"""Dynamic sharding (`distributed_epoch`): the pipeline's source is read in splits.

A split is a range of the source's elements. The dispatcher hands each split to one worker
stream; on the worker, the source yields the elements of the splits it is given, one after
another, and the rest of the pipeline runs on them unchanged. Splittable sources are the ones
that can cut a range out cheaply: `from_tensor_slices` (which also holds the file names of
`TFRecordDataset([...])`, `TextLineDataset`, `list_files`: those are split by file) and
`range`. A pipeline with other sources, or with more than one, is refused, as in TensorFlow.

On the worker the source object itself is patched (instance attributes), so every stage that
holds it sees the splits. Its normal iteration (used when a stage probes the first element to
learn its element spec) stays as it was: only iteration under a context carrying a split
provider (`IterContext.splits`) reads splits. Each pass over the source (a `repeat` starts
another) asks the dispatcher for splits of its own pass number.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

from tapeflow.data import composite, iterator_state, structure
from tapeflow.data.dataset import UNKNOWN
from tapeflow.data.sources import RangeDataset, TensorSliceDataset
from tapeflow.framework import errors

MAX_SPLITS_PER_WORKER = 64   # enough for load balancing; few enough dispatcher round trips
MAX_SPLIT = 4096


def source_of(dataset: Any) -> Any:
    """The one splittable source of `dataset`; InvalidArgumentError naming what is not."""
    leaves = [ds for ds in iterator_state.stages(dataset) if not getattr(ds, "_inputs", ())]
    kinds = ", ".join(type(ds).__name__ for ds in leaves)
    if len(leaves) != 1:
        raise errors.InvalidArgumentError(
            f"tf.data service distributed_epoch: the pipeline must have exactly one source "
            f"to split, found {len(leaves)} ({kinds})\n{errors.user_line()}")
    leaf = leaves[0]
    splittable = isinstance(leaf, RangeDataset) or (
        isinstance(leaf, TensorSliceDataset)
        and not any(composite.is_composite(a) for a in leaf._leaves))
    if not splittable:
        raise errors.InvalidArgumentError(
            f"tf.data service distributed_epoch: cannot split a pipeline whose source is "
            f"{kinds}; splittable sources are from_tensor_slices (including lists of files) "
            f"and range\n{errors.user_line()}")
    return leaf


def split_size(n: int, workers: int) -> int:
    """Elements per split for a source of `n` elements."""
    return max(1, min(MAX_SPLIT, n // (MAX_SPLITS_PER_WORKER * max(workers, 1))))


def num_elements(dataset: Any) -> int:
    return source_of(dataset)._cardinality()


def piece(leaf: Any, start: int, stop: int) -> Any:
    """A dataset of the source's elements [start, stop)."""
    if isinstance(leaf, RangeDataset):
        out = RangeDataset.__new__(RangeDataset)
        out._range, out._dtype = leaf._range[start:stop], leaf._dtype
        return out
    return TensorSliceDataset(structure.pack_like(leaf._struct,
                                                  [a[start:stop] for a in leaf._leaves]))


def install(dataset: Any) -> None:
    """Make the source of `dataset` (this process's copy) read splits from `ctx.splits`."""
    leaf = source_of(dataset)
    plain_iterate = leaf._iterate
    plain_chunks = getattr(leaf, "_chunks", None)

    def pieces(ctx: Any) -> Iterator[Any]:
        provider = ctx.splits
        epoch = provider.next_pass()
        for index in itertools.count():
            bounds = provider.get(epoch, index)
            if bounds is None:
                return
            yield piece(leaf, *bounds)

    def iterate(ctx: Any) -> Iterator[Any]:
        if getattr(ctx, "splits", None) is None:
            yield from plain_iterate(ctx)
            return
        for part in pieces(ctx):
            yield from part._iterate(ctx)

    def chunks(ctx: Any) -> Iterator[Any] | None:
        if getattr(ctx, "splits", None) is None:
            return plain_chunks(ctx)
        return (chunk for part in pieces(ctx) for chunk in part._chunks(ctx))

    leaf._iterate = iterate
    if plain_chunks is not None:
        leaf._chunks = chunks
    leaf._cardinality = lambda: UNKNOWN


class SplitProvider:
    """A worker stream's view of the dispatcher's splits: the i-th request of a pass always
    gets the same split (the dispatcher records what it handed to the stream), so a stream
    replayed on another worker reads exactly the splits the lost one read."""

    def __init__(self, address: str, dispatcher: Any, job: str, stream: int):
        self._address, self._dispatcher = address, dispatcher
        self._job, self._stream = job, stream
        self._passes = itertools.count()

    def next_pass(self) -> int:
        return next(self._passes)

    def get(self, epoch: int, index: int) -> tuple[int, int] | None:
        import ray
        from ray.exceptions import RayActorError

        from tapeflow.data.service import cluster

        while True:
            try:
                return ray.get(self._dispatcher.split.remote(self._job, self._stream, epoch,
                                                             index))
            except RayActorError:   # the dispatcher restarted (fault-tolerant mode): find it
                time.sleep(0.1)
                self._dispatcher = cluster.lookup("dispatcher", self._address)
