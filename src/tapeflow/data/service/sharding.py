"""Static sharding of a data-service job: worker i of n runs shard i of the pipeline.

The policies follow `tf.data.experimental.AutoShardPolicy`: FILE shards the list of files the
pipeline's reader reads (the rewrite tf.distribute uses, `distribute.input_lib.shard_files`;
an error if there is no such list or fewer files than workers), DATA keeps every n-th element
of the pipeline's output (`shard(n, i)` at the end), FILE_OR_DATA tries FILE and falls back to
DATA, and HINT leaves the pipeline as written: each `shard(SHARD_HINT, SHARD_HINT)` in it takes
(n, i) from the iteration context when it runs on the worker.
"""

from __future__ import annotations

from typing import Any

from tapeflow.data.service.config import ShardingPolicy
from tapeflow.framework import errors


def shard(dataset: Any, policy: ShardingPolicy, num_shards: int, index: int) -> Any:
    """The pipeline that worker `index` of `num_shards` runs under the static `policy`."""
    from tapeflow.distribute.input_lib import shard_files

    if policy in (ShardingPolicy.FILE, ShardingPolicy.FILE_OR_DATA):
        sharded = shard_files(dataset, num_shards, index)
        if sharded is not None:
            return sharded
        if policy is ShardingPolicy.FILE:
            raise errors.InvalidArgumentError(
                f"tf.data service ShardingPolicy.FILE: the pipeline must read a list of at "
                f"least {num_shards} files (one per worker) through one reader "
                f"(TFRecordDataset, TextLineDataset, FixedLengthRecordDataset); use "
                f"ShardingPolicy.DATA or FILE_OR_DATA for other pipelines")
    if policy in (ShardingPolicy.DATA, ShardingPolicy.FILE_OR_DATA):
        return dataset.shard(num_shards, index)
    return dataset   # HINT: the placeholders read (num_shards, index) from the context
