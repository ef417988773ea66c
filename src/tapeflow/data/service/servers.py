"""`DispatchServer` and `WorkerServer`: TensorFlow's server objects, as Ray actors.

A server runs as a named actor placed on the machine of the program that made it, and lives
as long as that program (or until `stop()`). Its address ("localhost:<port>") names it in the
Ray cluster: trainers and workers anywhere in the cluster find it by that name.
"""

from __future__ import annotations

import time
from typing import Any

from tapeflow.data.service import cluster
from tapeflow.data.service.config import (
    DEFAULT_PROTOCOL,
    DispatcherConfig,
    WorkerConfig,
    free_port,
    split_target,
)

_ACTOR_OPTIONS = {"num_cpus": 0, "max_concurrency": 64, "max_restarts": 0}
_ALIVE_TIMEOUT_S = 5.0


class _ActorServer:
    """What the dispatcher and the data workers share: a Ray actor to join, stop and kill."""

    _actor: Any = None

    def join(self) -> None:
        """Block while the server runs."""
        _join(self._actor)

    def stop(self) -> None:
        """Stop the server (a dispatcher's jobs end; its workers stop serving)."""
        _stop(self._actor)
        self._actor = None

    _stop = stop

    def _pid(self) -> int:
        """The actor's process id (tests kill it to check fault tolerance)."""
        return cluster.ray_module().get(self._actor.pid.remote())


class DispatchServer(_ActorServer):
    """`tf.data.experimental.service.DispatchServer`: keeps the datasets, workers and jobs."""

    _compact_every: int | None = None   # journal records between compactions (None: the
                                        # dispatcher's default; tests lower it)

    def __init__(self, config: DispatcherConfig | None = None, start: bool = True):
        self._config = config or DispatcherConfig()
        if self._config.fault_tolerant_mode and not self._config.work_dir:
            raise ValueError("tf.data service DispatcherConfig: fault_tolerant_mode=True needs "
                             "a work_dir for the dispatcher's journal")
        self._protocol = self._config.protocol or DEFAULT_PROTOCOL
        self._address = f"localhost:{self._config.port or free_port()}"
        self._actor: Any = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the dispatcher actor (idempotent)."""
        if self._actor is not None:
            return
        ray = cluster.ray_module()
        from tapeflow.data.service.dispatcher import COMPACT_EVERY, Dispatcher

        self._actor = _create(ray, Dispatcher, "dispatcher", self._address, self._address,
                              self._config.worker_addresses,
                              self._config.work_dir if self._config.fault_tolerant_mode
                              else None, self._compact_every or COMPACT_EVERY)
        ray.get(self._actor.pid.remote())

    @property
    def target(self) -> str:
        """"protocol://address", what `distribute(service=...)` takes."""
        return f"{self._protocol}://{self._address}"

    def _num_workers(self) -> int:
        return cluster.ray_module().get(self._actor.num_workers.remote())


class WorkerServer(_ActorServer):
    """`tf.data.experimental.service.WorkerServer`: a data worker registered with a
    dispatcher; it runs the jobs' pipelines and serves their elements to trainers."""

    def __init__(self, config: WorkerConfig, start: bool = True):
        if isinstance(config, str):
            raise TypeError("WorkerServer takes a WorkerConfig(dispatcher_address=...), "
                            "not an address")
        self._config = config
        _, self._dispatcher_address = split_target(config.dispatcher_address)
        self._address = config.worker_address or f"localhost:{config.port or free_port()}"
        self._actor: Any = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the worker actor and register it with the dispatcher (idempotent)."""
        if self._actor is not None:
            return
        ray = cluster.ray_module()
        from tapeflow.data.service.worker import DataWorker

        cluster.lookup("dispatcher", self._dispatcher_address)   # a clear error if absent
        actor = _create(ray, DataWorker, "worker", self._address, self._dispatcher_address,
                        self._address)
        ray.get(actor.register.remote(actor))
        self._actor = actor

    def _num_tasks(self) -> int:
        return cluster.ray_module().get(self._actor.num_tasks.remote())


def _create(ray: Any, cls: type, kind: str, address: str, *args: Any) -> Any:
    """The named actor of a server. A server that died (killed, its machine lost) still
    holds its name in Ray until its handle is killed: a new server at the same address (a
    restarted dispatcher resuming from its journal) takes the name over; a live one keeps it
    (ValueError: the address is in use)."""
    name = cluster.actor_name(kind, address)
    options = dict(name=name, namespace=cluster.NAMESPACE,
                   scheduling_strategy=cluster.current_node_affinity(), **_ACTOR_OPTIONS)
    try:
        return ray.remote(cls).options(**options).remote(*args)
    except ValueError:
        old = ray.get_actor(name, namespace=cluster.NAMESPACE)
        try:
            ray.get(old.pid.remote(), timeout=_ALIVE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - dead or hung: its name is free to take
            ray.kill(old)
            return ray.remote(cls).options(**options).remote(*args)
        raise ValueError(f"tf.data service: a {kind} is already running at {address}") from None


def _join(actor: Any) -> None:
    ray = cluster.ray_module()
    while actor is not None:
        try:
            ray.get(actor.pid.remote())
        except Exception:  # noqa: BLE001 - the actor ended: join returns
            return
        time.sleep(1.0)


def _stop(actor: Any) -> None:
    if actor is not None:
        cluster.ray_module().kill(actor)
