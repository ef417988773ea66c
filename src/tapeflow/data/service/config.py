"""TensorFlow's configuration types of the data service: server configs and sharding policies."""

from __future__ import annotations

import enum
import socket
from typing import Any, NamedTuple

from tapeflow.framework import errors


class ShardingPolicy(enum.IntEnum):
    """How a job divides the dataset among workers. OFF is `parallel_epochs` (every worker
    produces the whole dataset); DYNAMIC is `distributed_epoch` (workers take splits of the
    source from the dispatcher, each split once). The static policies are not built."""

    OFF = 0
    DYNAMIC = 1
    FILE = 2
    DATA = 3
    FILE_OR_DATA = 4
    HINT = 5


class DispatcherConfig(NamedTuple):
    """`tf.data.experimental.service.DispatcherConfig`. `port` (0: pick a free one) and
    `protocol` make the address; the rest is accepted for compatibility (the dispatcher is a
    Ray actor: it lives as long as the process that made it, with no journal in `work_dir`)."""

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
    if policy not in (ShardingPolicy.OFF, ShardingPolicy.DYNAMIC):
        raise errors.UnimplementedError(
            None, None, f"tf.data service: ShardingPolicy.{policy.name} (static sharding) is "
            f"not available in tapeflow; use ShardingPolicy.OFF ('parallel_epochs') or "
            f"ShardingPolicy.DYNAMIC ('distributed_epoch')")
    return policy
