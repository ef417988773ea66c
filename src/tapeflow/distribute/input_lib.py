"""A worker's part of a dataset (``strategy.experimental_distribute_dataset``).

The dataset is batched with the global batch size; each worker trains on per-replica batches
of global / workers rows. How the data is divided follows the dataset's
``options().experimental_distribute.auto_shard_policy``:

- DATA: every worker reads the whole pipeline and keeps its slice of each global batch, so step
  s of all workers together covers global batch s exactly (the same numbers as one process
  with the global batch), and every worker has the same number of steps.
- FILE: each worker reads its own share of the input files (``list_files`` / reader datasets
  over a list of files: the file list is sharded) and splits each batch it reads into
  per-replica batches. Workers may then see different numbers of batches: Keras ``fit`` stops
  an epoch when the first worker runs out.
- OFF: every worker reads everything, split into per-replica batches (data is duplicated).
- AUTO: FILE if the pipeline reads at least as many files as there are workers, else DATA.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.framework import nest
from tapeflow.framework.tensor import wrap


class AutoShardPolicy(enum.IntEnum):
    """How ``experimental_distribute_dataset`` divides a dataset between workers."""

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


def policy_of(dataset: Any) -> AutoShardPolicy:
    options = dataset.options() if hasattr(dataset, "options") else None
    policy = getattr(getattr(options, "experimental_distribute", None), "auto_shard_policy",
                     None)
    return AutoShardPolicy.AUTO if policy is None else AutoShardPolicy(int(policy))


def split_rows(element: Any, parts: int, index: int) -> Any:
    """Rows [index*n/parts, (index+1)*n/parts) of every tensor in a batch (None if it is
    smaller than `parts`: no worker may get an empty batch)."""
    flat = nest.flatten(element)
    sizes = {np.shape(_array(t))[0] if np.ndim(_array(t)) else None
             for t in flat if t is not None}
    if None in sizes:
        raise ValueError("experimental_distribute_dataset: the dataset must be batched (an "
                         "element has a 0-d component); call dataset.batch(global_batch_size)")
    if len(sizes) != 1:
        raise ValueError(f"experimental_distribute_dataset: the components of a batch have "
                         f"different numbers of rows {sorted(sizes)}")
    n = sizes.pop()
    if n < parts:
        return None
    lo, hi = index * n // parts, (index + 1) * n // parts
    return nest.pack_sequence_as(element, [
        None if t is None else wrap(np.ascontiguousarray(_array(t)[lo:hi])) for t in flat])


def _array(t: Any) -> np.ndarray:
    return t._value if hasattr(t, "_value") else np.asarray(t)


def _file_readers(dataset: Any, path: tuple = ()) -> list[tuple]:
    """Paths (root ... reader) to the file-reading datasets of a pipeline."""
    from tapeflow.data.readers import _FileReaderDataset

    if isinstance(dataset, _FileReaderDataset):
        return [path + (dataset,)]
    found = []
    for child in getattr(dataset, "_inputs", ()):
        found.extend(_file_readers(child, path + (dataset,)))
    return found


def _replace_child(node: Any, old: Any, new: Any) -> Any:
    clone = copy.copy(node)
    for key, value in list(vars(clone).items()):
        if value is old:
            setattr(clone, key, new)
        elif key == "_inputs":
            clone._inputs = tuple(new if c is old else c for c in value)
    return clone


def shard_files(dataset: Any, num_shards: int, index: int) -> Any:
    """The pipeline with its file list sharded, or None when it reads no file list (or fewer
    files than shards)."""
    paths = _file_readers(dataset)
    if len(paths) != 1:
        return None
    path = paths[0]
    reader = path[-1]
    files = reader._impl._inputs[0]
    n_files = files._cardinality()
    if n_files < num_shards:
        return None
    impl = _replace_child(reader._impl, files, files.shard(num_shards, index))
    new = _replace_child(reader, reader._impl, impl)
    for parent in reversed(path[:-1]):
        new_parent = _replace_child(parent, path[path.index(parent) + 1], new)
        new = new_parent
    return new


class DistributedDataset:
    """Iterating gives this worker's per-replica batches."""

    def __init__(self, dataset: Any, num_workers: int, worker: int):
        self._dataset = dataset
        self._n = num_workers
        self._i = worker
        policy = policy_of(dataset)
        self._source = dataset
        if num_workers > 1 and policy in (AutoShardPolicy.AUTO, AutoShardPolicy.FILE):
            sharded = shard_files(dataset, num_workers, worker)
            if sharded is None and policy is AutoShardPolicy.FILE:
                raise ValueError(
                    f"experimental_distribute_dataset: AutoShardPolicy.FILE needs a pipeline "
                    f"that reads a list of at least {num_workers} files (TFRecordDataset, "
                    f"TextLineDataset, ... over list_files); use AutoShardPolicy.DATA for "
                    f"other datasets")
            if sharded is not None:
                self._source, policy = sharded, AutoShardPolicy.FILE
            else:
                policy = AutoShardPolicy.DATA
        self.policy = policy if num_workers > 1 else AutoShardPolicy.OFF

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    @property
    def uneven(self) -> bool:
        """Whether workers may see different numbers of batches."""
        return self.policy is AutoShardPolicy.FILE

    def __iter__(self) -> Iterator[Any]:
        if self._n == 1:
            yield from self._source
            return
        for element in self._source:
            if self.policy is AutoShardPolicy.DATA:
                part = split_rows(element, self._n, self._i)
                if part is not None:
                    yield part
                continue
            for j in range(self._n):  # FILE and OFF: every per-replica batch of what we read
                part = split_rows(element, self._n, j)
                if part is not None:
                    yield part
