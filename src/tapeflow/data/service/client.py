"""The trainer's side: `distribute`, `register_dataset`, `from_dataset_id`.

Iterating a data-service dataset opens a job at the dispatcher (a new one per iteration, or
the one named `job_name`, shared by the trainers that name it) and reads its streams: for each
stream one fetch is in flight at a time, for the positions claimed at the dispatcher just
before (see dispatcher.py). Each claim's answer lists the job's streams, so a stream of a
worker that joined the running job is read from the next claim on. Elements come in the
order fetches complete, which mixes streams (TensorFlow gives no order either). When a worker
dies mid-fetch, the dispatcher moves its stream to a live worker and the same positions are
fetched from there.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow.data import iterator_state
from tapeflow.data.dataset import UNKNOWN, Dataset
from tapeflow.data.service import cluster, splits
from tapeflow.data.service.config import (
    CrossTrainerCache,
    ShardingPolicy,
    sharding_policy,
    split_target,
)
from tapeflow.framework import errors
from tapeflow.framework.tensor import wrap

DEFAULT_FETCH = 8             # positions claimed and fetched per request
WORKER_WAIT_S = 60.0          # how long a job waits for its first data worker


def _payload(dataset: Dataset) -> bytes:
    import ray.cloudpickle as cloudpickle

    try:
        return cloudpickle.dumps(dataset)
    except Exception as e:  # noqa: BLE001 - pickling raises many types
        raise TypeError(f"tf.data service: the dataset cannot be sent to data workers "
                        f"({type(e).__name__}: {e}); its functions and the values they "
                        f"capture must be picklable\n{errors.user_line()}") from None


def _check_replayable(dataset: Dataset) -> None:
    """distributed_epoch replays a dead worker's stream: its order must be reproducible."""
    for ds in iterator_state.stages(dataset):
        if getattr(ds, "_deterministic", None) is False:
            raise errors.InvalidArgumentError(
                f"tf.data service distributed_epoch: {type(ds).__name__} runs with "
                f"deterministic=False, so a stream replayed after a worker failure could "
                f"give other elements; leave deterministic unset or True\n{errors.user_line()}")


def _register(dispatcher: Any, dataset: Dataset, dataset_id: str | None = None) -> str:
    ray = cluster.ray_module()
    spec = dataset.element_spec
    size = splits.num_elements(dataset) if _splittable(dataset) else -1
    payload = _payload(dataset)
    fingerprint = hashlib.sha256(payload).hexdigest()
    return ray.get(dispatcher.register_dataset.remote(payload, spec, fingerprint, size,
                                                      dataset_id))


def register_dataset(service: Any, dataset: Dataset, compression: str | None = "AUTO",
                     dataset_id: str | None = None) -> Any:
    """Register `dataset` with the dispatcher; its id (a string scalar) for
    `from_dataset_id`. Registering the same pipeline again gives the same id."""
    _, address = split_target(service)
    ds_id = _register(cluster.lookup("dispatcher", address), dataset,
                      None if dataset_id is None else _text(dataset_id))
    return wrap(np.asarray(ds_id.encode(), dtype=object))


def _splittable(dataset: Dataset) -> bool:
    try:
        splits.source_of(dataset)
    except errors.InvalidArgumentError:
        return False
    return True


def _text(value: Any) -> str:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value[()]
    return value.decode() if isinstance(value, bytes) else str(value)


class DataServiceDataset(Dataset):
    """Elements produced by data workers for one job of the dispatcher at `service`."""

    def __init__(self, policy: ShardingPolicy, service: Any, dataset: Dataset | None = None,
                 dataset_id: str | None = None, element_spec: Any = None,
                 job_name: str | None = None, fetch: int = DEFAULT_FETCH,
                 consumer_index: int | None = None, num_consumers: int | None = None,
                 cross_trainer_cache: CrossTrainerCache | None = None):
        self._policy = policy
        self._protocol, self._address = split_target(service)
        self._dataset, self._dataset_id = dataset, dataset_id
        self._spec_value = element_spec
        self._job_name = job_name
        self._fetch = fetch
        self._consumer = (consumer_index, num_consumers)
        self._cache = cross_trainer_cache
        if dataset is not None and policy is ShardingPolicy.DYNAMIC:
            splits.source_of(dataset)
            _check_replayable(dataset)
        if dataset is not None and (num_consumers is not None or cross_trainer_cache):
            _check_infinite(dataset, "coordinated reads (num_consumers)" if num_consumers
                            is not None else "cross_trainer_cache")

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        ray = cluster.ray_module()
        client = uuid.uuid4().hex
        dispatcher = _DispatcherClient(self._address)
        dataset_id = self._dataset_id
        if dataset_id is None:
            dataset_id = dispatcher.call(lambda d: _register(d, self._dataset))
        key, streams = self._open(dispatcher, dataset_id, client)
        try:
            consumer, num_consumers = self._consumer
            if num_consumers is not None:
                yield from _consume_rounds(ray, dispatcher, key, len(streams), consumer,
                                           max(self._fetch, len(streams)))
            elif self._cache is not None:
                yield from _consume_shared(ray, dispatcher, key, streams,
                                           self._cache.trainer_id, self._fetch)
            else:
                yield from _consume(ray, dispatcher, key, streams, self._fetch, client)
        finally:
            dispatcher.send(lambda d: d.release.remote(key, client))

    def _open(self, dispatcher: _DispatcherClient, dataset_id: str, client: str) -> tuple:
        deadline = time.monotonic() + WORKER_WAIT_S
        _, num_consumers = self._consumer
        while True:
            opened = dispatcher.get(lambda d: d.open_job.remote(
                dataset_id, int(self._policy), self._job_name, client, num_consumers,
                self._cache is not None))
            if opened is not None:
                return opened
            if time.monotonic() > deadline:
                raise errors.UnavailableError(
                    f"tf.data service: the data workers this job needs did not register with "
                    f"the dispatcher at {self._address} within {WORKER_WAIT_S:.0f} s (start "
                    f"WorkerServers; static sharding needs every worker of worker_addresses)")
            time.sleep(0.2)

    def _compute_spec(self) -> Any:
        if self._spec_value is None:
            if self._dataset is not None:
                self._spec_value = self._dataset.element_spec
            else:
                self._spec_value = _DispatcherClient(self._address).get(
                    lambda d: d.element_spec.remote(self._dataset_id))
        return self._spec_value

    def _cardinality(self) -> int:
        return UNKNOWN


class _DispatcherClient:
    """Calls to the dispatcher that survive its restart: a call that finds the actor dead
    looks the dispatcher up again by its address and retries (a fault-tolerant dispatcher
    answers a retried claim as it answered the first time)."""

    def __init__(self, address: str):
        self.address = address
        self.handle = cluster.lookup("dispatcher", address)

    def call(self, fn: Callable[[Any], Any]) -> Any:
        from ray.exceptions import RayActorError

        deadline = time.monotonic() + cluster.LOOKUP_TIMEOUT_S
        while True:
            try:
                return fn(self.handle)
            except RayActorError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
                self.handle = cluster.lookup("dispatcher", self.address)

    def get(self, remote_call: Callable[[Any], Any]) -> Any:
        ray = cluster.ray_module()
        return self.call(lambda d: ray.get(remote_call(d)))

    def reassign(self, key: str, sid: int, version: int) -> tuple[Any, int]:
        """Where a stream whose worker died is served now: (worker handle, version)."""
        return self.get(lambda d: d.reassign.remote(key, sid, version))

    def send(self, remote_call: Callable[[Any], Any]) -> None:
        """Fire and forget (a dispatcher that is gone needs no goodbye)."""
        try:
            remote_call(self.handle)
        except Exception:  # noqa: BLE001 - best effort
            pass


def _check_infinite(dataset: Dataset, what: str) -> None:
    n = dataset._cardinality()
    if n >= 0:
        raise errors.InvalidArgumentError(
            f"tf.data service {what}: the dataset must be infinite (its cardinality is {n}); "
            f"add .repeat() so the consumers stay in step\n{errors.user_line()}")


def _fetch_error(e: Exception) -> BaseException:
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e


def _consume(ray: Any, dispatcher: _DispatcherClient, key: str, streams: list, count: int,
             client: str) -> Iterator[Any]:
    from ray.exceptions import RayActorError, RayTaskError

    inflight: dict = {}
    seq = dict.fromkeys(streams, 0)

    def claim(sid: int, ack: int | None = None, end: int | None = None) -> None:
        seq[sid] += 1
        got, opened = dispatcher.get(lambda d: d.claim.remote(key, sid, count, ack, end,
                                                              client, seq[sid]))
        if got is not None:
            start, n, low, handle, _ = got
            inflight[handle.fetch.remote(key, sid, start, n, low)] = (sid, got)
        for new in opened:   # a worker joined the running job: read its stream too
            if new not in seq:
                seq[new] = 0
                claim(new)

    for sid in streams:
        claim(sid)
    while inflight:
        ready, _ = ray.wait(list(inflight), num_returns=1)
        sid, got = inflight.pop(ready[0])
        start, n, low, handle, version = got
        try:
            items, end = ray.get(ready[0])
        except RayActorError:
            handle, version = dispatcher.reassign(key, sid, version)
            got = (start, n, low, handle, version)
            inflight[handle.fetch.remote(key, sid, start, n, low)] = (sid, got)
            continue
        except RayTaskError as e:
            raise _fetch_error(e) from None
        claim(sid, ack=start, end=end)
        yield from items


def _consume_rounds(ray: Any, dispatcher: _DispatcherClient, key: str, n_streams: int,
                    consumer: int, window: int) -> Iterator[Any]:
    """Coordinated reads: rounds in order, `window` of them in flight."""
    from ray.exceptions import RayActorError, RayTaskError

    pending: deque = deque()
    next_round = 0

    def ask() -> None:
        nonlocal next_round
        done = pending[0][0] if pending else next_round
        got = dispatcher.get(lambda d: d.round.remote(key, consumer, next_round, done))
        if got is not None:
            sid, position, low, handle, _ = got
            pending.append([next_round, got, handle.fetch.remote(key, sid, position, 1, low)])
        next_round += 1

    for _ in range(window):
        ask()
    while pending:
        r, got, ref = pending[0]
        sid, position, low, handle, version = got
        try:
            items, _ = ray.get(ref)
        except RayActorError:
            handle, version = dispatcher.reassign(key, sid, version)
            pending[0][1] = (sid, position, low, handle, version)
            pending[0][2] = handle.fetch.remote(key, sid, position, 1, low)
            continue
        except RayTaskError as e:
            raise _fetch_error(e) from None
        pending.popleft()
        if not items:
            return   # the stream ended (a finite dataset): the consumers are out of step
        yield items[0]
        ask()


def _consume_shared(ray: Any, dispatcher: _DispatcherClient, key: str, streams: list,
                    trainer: str, count: int) -> Iterator[Any]:
    """Cross-trainer cache: each stream's window from this trainer's read position on."""
    from ray.exceptions import RayActorError, RayTaskError

    inflight = {}
    for sid in streams:
        handle, version = dispatcher.get(lambda d, s=sid: d.worker_of.remote(key, s))
        inflight[handle.fetch_shared.remote(key, sid, trainer, count)] = (sid, handle, version)
    while inflight:
        ready, _ = ray.wait(list(inflight), num_returns=1)
        sid, handle, version = inflight.pop(ready[0])
        try:
            items, end = ray.get(ready[0])
        except RayActorError:
            handle, version = dispatcher.reassign(key, sid, version)
            inflight[handle.fetch_shared.remote(key, sid, trainer, count)] = (sid, handle,
                                                                              version)
            continue
        except RayTaskError as e:
            raise _fetch_error(e) from None
        if end is None:
            inflight[handle.fetch_shared.remote(key, sid, trainer, count)] = (sid, handle,
                                                                              version)
        yield from items


def distribute(processing_mode: Any, service: Any, job_name: str | None = None,
               consumer_index: int | None = None, num_consumers: int | None = None,
               max_outstanding_requests: int | None = None,
               data_transfer_protocol: str | None = None, compression: str | None = "AUTO",
               cross_trainer_cache: CrossTrainerCache | None = None,
               target_workers: str = "AUTO") -> Callable[[Dataset], Dataset]:
    """A transformation (for `Dataset.apply`) that runs the dataset on the data service."""
    policy = sharding_policy(processing_mode)
    name = None if job_name is None else _text(job_name)
    consumer = _check_reads(policy, name, consumer_index, num_consumers, cross_trainer_cache,
                            target_workers)
    fetch = max_outstanding_requests or DEFAULT_FETCH
    return lambda dataset: DataServiceDataset(policy, service, dataset=dataset, job_name=name,
                                              fetch=fetch, consumer_index=consumer[0],
                                              num_consumers=consumer[1],
                                              cross_trainer_cache=cross_trainer_cache)


def from_dataset_id(processing_mode: Any, service: Any, dataset_id: Any,
                    element_spec: Any = None, job_name: str | None = None,
                    consumer_index: int | None = None, num_consumers: int | None = None,
                    max_outstanding_requests: int | None = None,
                    data_transfer_protocol: str | None = None,
                    cross_trainer_cache: CrossTrainerCache | None = None,
                    target_workers: str = "AUTO") -> Dataset:
    """The dataset registered as `dataset_id`, read through the data service."""
    policy = sharding_policy(processing_mode)
    name = None if job_name is None else _text(job_name)
    consumer = _check_reads(policy, name, consumer_index, num_consumers, cross_trainer_cache,
                            target_workers)
    return DataServiceDataset(policy, service, dataset_id=_text(dataset_id),
                              element_spec=element_spec, job_name=name,
                              fetch=max_outstanding_requests or DEFAULT_FETCH,
                              consumer_index=consumer[0], num_consumers=consumer[1],
                              cross_trainer_cache=cross_trainer_cache)


def _check_reads(policy: ShardingPolicy, job_name: str | None, consumer_index: Any,
                 num_consumers: Any, cross_trainer_cache: Any,
                 target_workers: str) -> tuple[int | None, int | None]:
    """TensorFlow's argument rules for coordinated reads and the cross-trainer cache."""
    if (consumer_index is None) != (num_consumers is None):
        raise ValueError(f"tf.data service: set both consumer_index and num_consumers, or "
                         f"neither (got consumer_index={consumer_index}, "
                         f"num_consumers={num_consumers})")
    if num_consumers is not None:
        consumer_index, num_consumers = int(consumer_index), int(num_consumers)
        if job_name is None:
            raise ValueError(f"tf.data service: job_name must be set when setting "
                             f"num_consumers (num_consumers={num_consumers})")
        if not 0 <= consumer_index < num_consumers:
            raise ValueError(f"tf.data service: consumer_index must be in [0, num_consumers="
                             f"{num_consumers}), got {consumer_index}")
    if cross_trainer_cache is not None:
        if not isinstance(cross_trainer_cache, CrossTrainerCache):
            raise TypeError(f"tf.data service: cross_trainer_cache must be a "
                            f"CrossTrainerCache, got {type(cross_trainer_cache).__name__}")
        if job_name is None:
            raise ValueError("tf.data service: cross_trainer_cache needs a job_name (trainers "
                             "share the job of that name)")
        if policy is not ShardingPolicy.OFF:
            raise errors.InvalidArgumentError(
                f"tf.data service: cross_trainer_cache needs ShardingPolicy.OFF "
                f"('parallel_epochs'), got {policy.name}\n{errors.user_line()}")
        if num_consumers is not None:
            raise ValueError("tf.data service: cross_trainer_cache and coordinated reads "
                             "(num_consumers) cannot be combined")
    if str(target_workers).upper() not in ("AUTO", "ANY"):
        raise errors.UnimplementedError(
            None, None, f"tf.data service: target_workers={target_workers!r} is not available "
            f"in tapeflow (AUTO or ANY)")
    return consumer_index, num_consumers
