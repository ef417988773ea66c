"""The trainer's side: `distribute`, `register_dataset`, `from_dataset_id`.

Iterating a data-service dataset opens a job at the dispatcher (a new one per iteration, or
the one named `job_name`, shared by the trainers that name it) and reads its streams: for each
stream one fetch is in flight at a time, for the positions claimed at the dispatcher just
before (see dispatcher.py). Elements come in the order fetches complete, which mixes streams
(TensorFlow gives no order either). When a worker dies mid-fetch, the dispatcher moves its
stream to a live worker and the same positions are fetched from there.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow.data import iterator_state
from tapeflow.data.dataset import UNKNOWN, Dataset
from tapeflow.data.service import cluster, splits
from tapeflow.data.service.config import ShardingPolicy, sharding_policy, split_target
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
                 job_name: str | None = None, fetch: int = DEFAULT_FETCH):
        self._policy = policy
        self._protocol, self._address = split_target(service)
        self._dataset, self._dataset_id = dataset, dataset_id
        self._spec_value = element_spec
        self._job_name = job_name
        self._fetch = fetch
        if dataset is not None and policy is ShardingPolicy.DYNAMIC:
            splits.source_of(dataset)
            _check_replayable(dataset)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        ray = cluster.ray_module()
        dispatcher = cluster.lookup("dispatcher", self._address)
        dynamic = self._policy is ShardingPolicy.DYNAMIC
        dataset_id = self._dataset_id
        if dataset_id is None:
            dataset_id = _register(dispatcher, self._dataset)
        key, streams = self._open(ray, dispatcher, dataset_id, dynamic)
        try:
            yield from _consume(ray, dispatcher, key, streams, self._fetch)
        finally:
            dispatcher.release.remote(key)

    def _open(self, ray: Any, dispatcher: Any, dataset_id: str, dynamic: bool) -> tuple:
        deadline = time.monotonic() + WORKER_WAIT_S
        while True:
            opened = ray.get(dispatcher.open_job.remote(dataset_id, dynamic, self._job_name))
            if opened is not None:
                return opened
            if time.monotonic() > deadline:
                raise errors.UnavailableError(
                    f"tf.data service: no data worker registered with the dispatcher at "
                    f"{self._address} within {WORKER_WAIT_S:.0f} s (start a WorkerServer)")
            time.sleep(0.2)

    def _compute_spec(self) -> Any:
        if self._spec_value is None:
            if self._dataset is not None:
                self._spec_value = self._dataset.element_spec
            else:
                dispatcher = cluster.lookup("dispatcher", self._address)
                self._spec_value = cluster.ray_module().get(
                    dispatcher.element_spec.remote(self._dataset_id))
        return self._spec_value

    def _cardinality(self) -> int:
        return UNKNOWN


def _consume(ray: Any, dispatcher: Any, key: str, streams: list, count: int) -> Iterator[Any]:
    from ray.exceptions import RayActorError, RayTaskError

    inflight: dict = {}

    def claim(sid: int, ack: int | None = None, end: int | None = None) -> None:
        got = ray.get(dispatcher.claim.remote(key, sid, count, ack, end))
        if got is not None:
            start, n, low, handle, _ = got
            inflight[handle.fetch.remote(key, sid, start, n, low)] = (sid, got)

    for sid in streams:
        claim(sid)
    while inflight:
        ready, _ = ray.wait(list(inflight), num_returns=1)
        sid, got = inflight.pop(ready[0])
        start, n, low, handle, version = got
        try:
            items, end = ray.get(ready[0])
        except RayActorError:
            handle, version = ray.get(dispatcher.reassign.remote(key, sid, version))
            got = (start, n, low, handle, version)
            inflight[handle.fetch.remote(key, sid, start, n, low)] = (sid, got)
            continue
        except RayTaskError as e:
            cause = getattr(e, "cause", None)
            raise (cause if isinstance(cause, BaseException) else e) from None
        claim(sid, ack=start, end=end)
        yield from items


def distribute(processing_mode: Any, service: Any, job_name: str | None = None,
               consumer_index: int | None = None, num_consumers: int | None = None,
               max_outstanding_requests: int | None = None,
               data_transfer_protocol: str | None = None, compression: str | None = "AUTO",
               cross_trainer_cache: Any = None,
               target_workers: str = "AUTO") -> Callable[[Dataset], Dataset]:
    """A transformation (for `Dataset.apply`) that runs the dataset on the data service."""
    policy = sharding_policy(processing_mode)
    _unsupported(consumer_index, num_consumers, cross_trainer_cache, target_workers)
    fetch = max_outstanding_requests or DEFAULT_FETCH
    name = None if job_name is None else _text(job_name)
    return lambda dataset: DataServiceDataset(policy, service, dataset=dataset, job_name=name,
                                              fetch=fetch)


def from_dataset_id(processing_mode: Any, service: Any, dataset_id: Any,
                    element_spec: Any = None, job_name: str | None = None,
                    consumer_index: int | None = None, num_consumers: int | None = None,
                    max_outstanding_requests: int | None = None,
                    data_transfer_protocol: str | None = None, cross_trainer_cache: Any = None,
                    target_workers: str = "AUTO") -> Dataset:
    """The dataset registered as `dataset_id`, read through the data service."""
    policy = sharding_policy(processing_mode)
    _unsupported(consumer_index, num_consumers, cross_trainer_cache, target_workers)
    return DataServiceDataset(policy, service, dataset_id=_text(dataset_id),
                              element_spec=element_spec,
                              job_name=None if job_name is None else _text(job_name),
                              fetch=max_outstanding_requests or DEFAULT_FETCH)


def _unsupported(consumer_index: Any, num_consumers: Any, cross_trainer_cache: Any,
                 target_workers: str) -> None:
    if consumer_index is not None or num_consumers is not None:
        raise errors.UnimplementedError(
            None, None, "tf.data service: coordinated reads (consumer_index, num_consumers) "
            "are not available in tapeflow")
    if cross_trainer_cache is not None:
        raise errors.UnimplementedError(
            None, None, "tf.data service: cross_trainer_cache is not available in tapeflow")
    if str(target_workers).upper() not in ("AUTO", "ANY"):
        raise errors.UnimplementedError(
            None, None, f"tf.data service: target_workers={target_workers!r} is not available "
            f"in tapeflow (AUTO or ANY)")
