"""TensorFlow's configuration types of the data service: server configs and sharding policies."""

from __future__ import annotations

import enum
import socket
from typing import Any, NamedTuple

from tapeflow.framework import errors


class ShardingPolicy(enum.IntEnum):
    """How a job divides the dataset among workers. OFF is `parallel_epochs` (every worker
    produces the whole dataset); DYNAMIC is `distributed_epoch` (workers take splits of the
    source from the dispatcher, each split once). The static policies give the worker at
    position i of `DispatcherConfig.worker_addresses` shard i of n: FILE shards the files its
    readers read, DATA the elements, FILE_OR_DATA files when it can, HINT replaces each
    `shard(SHARD_HINT, SHARD_HINT)` of the pipeline (see sharding.py)."""

    OFF = 0
    DYNAMIC = 1
    FILE = 2
    DATA = 3
    FILE_OR_DATA = 4
    HINT = 5


class DispatcherConfig(NamedTuple):
    """`tf.data.experimental.service.DispatcherConfig`. `port` (0: pick a free one) and
    `protocol` make the address. `worker_addresses` fixes the workers of static sharding.
    With `fault_tolerant_mode`, the dispatcher journals its state in `work_dir`, and a
    dispatcher started again with the same config (port, work_dir) resumes its jobs where the
    lost one left them (journal.py). The other fields are accepted for compatibility."""

    port: int = 0
    protocol: str | None = None
    work_dir: str | None = None
    fault_tolerant_mode: bool = False
    worker_addresses: Any = None
    job_gc_check_interval_ms: int | None = None
    job_gc_timeout_ms: int | None = None
    worker_timeout_ms: int | None = None
    worker_max_concurrent_snapshots: int = 0


class WorkerConfig(NamedTuple):
    """`tf.data.experimental.service.WorkerConfig`: `dispatcher_address` ("host:port", as in
    `dispatcher.target.split("://")[1]`) is required; `port` 0 picks a free one."""

    dispatcher_address: str
    worker_address: str | None = None
    port: int = 0
    protocol: str | None = None
    heartbeat_interval_ms: int | None = None
    dispatcher_timeout_ms: int | None = None
    data_transfer_protocol: str | None = None
    data_transfer_address: str | None = None


DEFAULT_PROTOCOL = "grpc"


def free_port() -> int:
    """A port number no other socket holds now (it names a server in the Ray cluster)."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def split_target(service: Any) -> tuple[str, str]:
    """(protocol, address) from "protocol://address", "address" or a (protocol, address) pair."""
    if isinstance(service, (tuple, list)) and len(service) == 2:
        return str(service[0]), str(service[1])
    if hasattr(service, "numpy"):
        service = service.numpy()
    if isinstance(service, bytes):
        service = service.decode()
    if not isinstance(service, str) or not service:
        raise errors.InvalidArgumentError(
            f"service must be a dispatcher target like 'grpc://localhost:5050', got "
            f"{service!r}\n{errors.user_line()}")
    if "://" in service:
        protocol, address = service.split("://", 1)
        return protocol, address
    return DEFAULT_PROTOCOL, service


class CrossTrainerCache:
    """`tf.data.experimental.service.CrossTrainerCache`: trainers that name one job with
    different `trainer_id`s share what its workers produce (a sliding window of elements kept
    on each worker), instead of splitting it; consumers with the same id split it."""

    def __init__(self, trainer_id: Any):
        if hasattr(trainer_id, "numpy"):
            trainer_id = trainer_id.numpy()
        if isinstance(trainer_id, bytes):
            trainer_id = trainer_id.decode()
        if not trainer_id:
            raise ValueError("tf.data service CrossTrainerCache: trainer_id must not be empty")
        self.trainer_id = str(trainer_id)


STATIC_POLICIES = (ShardingPolicy.FILE, ShardingPolicy.DATA, ShardingPolicy.FILE_OR_DATA,
                   ShardingPolicy.HINT)


def sharding_policy(processing_mode: Any) -> ShardingPolicy:
    """The policy of a `processing_mode` argument (a name or a ShardingPolicy)."""
    if isinstance(processing_mode, ShardingPolicy):
        policy = processing_mode
    elif processing_mode == "parallel_epochs":
        policy = ShardingPolicy.OFF
    elif processing_mode == "distributed_epoch":
        policy = ShardingPolicy.DYNAMIC
    else:
        raise errors.InvalidArgumentError(
            f"processing_mode must be 'parallel_epochs', 'distributed_epoch' or a "
            f"ShardingPolicy, got {processing_mode!r}\n{errors.user_line()}")
    return policy
