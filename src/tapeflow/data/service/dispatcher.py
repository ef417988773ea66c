"""The dispatcher (a Ray actor): registered datasets, data workers, jobs, streams and splits.

A job runs one dataset for its consumers (trainers). It has one *stream* per data worker alive
when it started: the dataset's elements as one worker produces them, numbered 0, 1, 2...
In `parallel_epochs` every stream is the whole dataset; in `distributed_epoch` each stream's
source reads the splits the dispatcher hands it (`split`), each split to one stream only.

Exactly once, with workers that die: consumers *claim* a range of a stream's positions here
before fetching it from the worker, and acknowledge it with their next claim. Which split a
stream got at each request is recorded, and a stream's pipeline is deterministic given its
splits and its seed, so when a worker dies its streams move to a live worker that replays
them: it recomputes the elements before the lowest unacknowledged claim without keeping
them, and serves the claims from there. Every position is claimed by one consumer once, and
that consumer fetches it until it arrives, so each element is delivered exactly once.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tapeflow.data.service import splits
from tapeflow.framework import errors

_PING_TIMEOUT_S = 10.0


@dataclass
class _Stream:
    worker: int                                     # id of the worker producing it
    version: int = 0                                # bumped when it moves to another worker
    next_claim: int = 0
    unacked: dict = field(default_factory=dict)     # start -> count, claims not yet confirmed
    end: int | None = None                          # its length, once a consumer saw the end
    splits: dict = field(default_factory=dict)      # pass -> [split index handed out, ...]


@dataclass
class _Job:
    key: str
    dataset_id: str
    dynamic: bool
    seed: int
    streams: dict = field(default_factory=dict)     # stream id -> _Stream
    next_split: dict = field(default_factory=dict)  # pass -> next split index to hand out
    num_splits: int = 0
    split_size: int = 1
    source_size: int = 0
    consumers: int = 0


class Dispatcher:
    """Body of the dispatcher actor (threaded: calls from workers and trainers interleave)."""

    def __init__(self, address: str):
        self._address = address
        self._lock = threading.Lock()
        self._datasets: dict[str, dict] = {}
        self._next_dataset = 1000
        self._workers: dict[int, list] = {}         # id -> [handle, address, alive]
        self._jobs: dict[str, _Job] = {}
        self._next_job = 0

    def pid(self) -> int:
        return os.getpid()

    # ---- datasets and workers ------------------------------------------------------------
    def register_dataset(self, payload: bytes, spec: Any, fingerprint: str,
                         source_size: int, dataset_id: str | None) -> str:
        """The id of the dataset (the same id for the same pipeline registered again)."""
        with self._lock:
            if dataset_id is None:
                for key, entry in self._datasets.items():
                    if entry["fingerprint"] == fingerprint:
                        return key
                dataset_id = str(self._next_dataset)
                self._next_dataset += 1
            elif dataset_id in self._datasets:
                return dataset_id
            self._datasets[dataset_id] = {"payload": payload, "spec": spec,
                                          "fingerprint": fingerprint,
                                          "source_size": source_size}
            return dataset_id

    def element_spec(self, dataset_id: str) -> Any:
        return self._dataset(dataset_id)["spec"]

    def _dataset(self, dataset_id: str) -> dict:
        entry = self._datasets.get(dataset_id)
        if entry is None:
            raise errors.NotFoundError(f"tf.data service: dataset id {dataset_id!r} is not "
                                       f"registered with the dispatcher at {self._address}")
        return entry

    def add_worker(self, handle: Any, address: str) -> int:
        with self._lock:
            wid = len(self._workers)
            self._workers[wid] = [handle, address, True]
            return wid

    def _check_workers(self) -> None:
        """Mark the workers that do not answer a ping as dead (before starting a job)."""
        import ray

        with self._lock:
            alive = [(wid, w[0]) for wid, w in self._workers.items() if w[2]]
        pings = [(wid, handle.ping.remote()) for wid, handle in alive]
        for wid, ref in pings:
            try:
                ray.get(ref, timeout=_PING_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - dead, unreachable or hung: not used
                with self._lock:
                    self._workers[wid][2] = False

    def num_workers(self) -> int:
        with self._lock:
            return sum(1 for w in self._workers.values() if w[2])

    # ---- jobs ------------------------------------------------------------------------------
    def open_job(self, dataset_id: str, dynamic: bool,
                 job_name: str | None) -> tuple[str, list] | None:
        """Join the job named `job_name` or start a new one: (job key, [stream ids]); None
        while no worker is alive to run it."""
        self._check_workers()
        with self._lock:
            entry = self._dataset(dataset_id)
            if dynamic and entry["source_size"] < 0:
                raise errors.InvalidArgumentError(
                    f"tf.data service distributed_epoch: dataset {dataset_id} has no source "
                    f"that can be split (from_tensor_slices or range)")
            if job_name is not None and job_name in self._jobs:
                job = self._jobs[job_name]
                job.consumers += 1
                return job.key, list(job.streams)
            live = [wid for wid, w in self._workers.items() if w[2]]
            if not live:
                return None
            key = job_name if job_name is not None else f"job-{self._next_job}"
            self._next_job += 1
            n = entry["source_size"] if dynamic else 0
            size = splits.split_size(n, len(live))
            job = _Job(key, dataset_id, dynamic, int(np.random.default_rng().integers(1 << 62)),
                       source_size=n, split_size=size, num_splits=-(-n // size), consumers=1)
            for sid, wid in enumerate(live):
                job.streams[sid] = _Stream(wid)
            self._jobs[key] = job
            starts = [(self._workers[s.worker][0], sid) for sid, s in job.streams.items()]
            payload = entry["payload"]
        import ray

        ray.get([handle.open_stream.remote(key, sid, payload, dynamic, self._seed(job, sid), 0)
                 for handle, sid in starts])
        return key, list(job.streams)

    @staticmethod
    def _seed(job: _Job, sid: int) -> int:
        return hash((job.seed, sid)) & (2**62 - 1)

    def release(self, key: str) -> None:
        """A consumer is done with the job; the last one ends it and frees the workers."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return
            job.consumers -= 1
            if job.consumers > 0:
                return
            del self._jobs[key]
            handles = [w[0] for w in self._workers.values() if w[2]]
        for handle in handles:
            handle.close_job.remote(key)

    # ---- claims ----------------------------------------------------------------------------
    def claim(self, key: str, sid: int, count: int, ack: int | None = None,
              end: int | None = None) -> tuple | None:
        """Confirm the consumer's previous claim on the stream (`ack`: its start; `end`: the
        stream's length if the fetch saw it) and claim the next `count` positions:
        (start, count, lowest unconfirmed start, worker handle, stream version), or None when
        the stream has ended."""
        with self._lock:
            job = self._jobs[key]
            stream = job.streams[sid]
            if ack is not None:
                stream.unacked.pop(ack, None)
            if end is not None:
                stream.end = end if stream.end is None else min(stream.end, end)
            if stream.end is not None and stream.next_claim >= stream.end:
                return None
            start = stream.next_claim
            stream.next_claim += count
            stream.unacked[start] = count
            return (start, count, min(stream.unacked), self._workers[stream.worker][0],
                    stream.version)

    # ---- splits ----------------------------------------------------------------------------
    def split(self, key: str, sid: int, epoch: int, index: int) -> tuple[int, int] | None:
        """The `index`-th split of pass `epoch` of a stream: the one recorded for it, else the
        next one nobody has had; None when the pass has no more."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return None   # the job was released; its streams are being closed
            record = job.streams[sid].splits.setdefault(epoch, [])
            if index < len(record):
                split = record[index]
            else:
                split = job.next_split.get(epoch, 0)
                if split >= job.num_splits:
                    return None
                job.next_split[epoch] = split + 1
                record.append(split)
            start = split * job.split_size
            return start, min(start + job.split_size, job.source_size)

    # ---- failures --------------------------------------------------------------------------
    def reassign(self, key: str, sid: int, version: int) -> tuple[Any, int]:
        """The stream's worker died (a consumer's fetch failed at `version`): replay the
        stream on a live worker. Returns (worker handle, version) to fetch from."""
        import ray

        while True:
            with self._lock:
                job = self._jobs[key]
                stream = job.streams[sid]
                if stream.version != version:   # another consumer moved it already
                    return self._workers[stream.worker][0], stream.version
                self._workers[stream.worker][2] = False
                live = [wid for wid, w in self._workers.items() if w[2]]
                if not live:
                    raise errors.UnavailableError(
                        f"tf.data service: the data worker running stream {sid} of {key} "
                        f"died and no other worker is alive to take it over")
                load = {wid: 0 for wid in live}
                for s in job.streams.values():
                    if s.worker in load:
                        load[s.worker] += 1
                wid = min(live, key=load.__getitem__)
                handle = self._workers[wid][0]
                resume = min([*stream.unacked, stream.next_claim])
                payload = self._datasets[job.dataset_id]["payload"]
                seed = self._seed(job, sid)
            try:
                ray.get(handle.open_stream.remote(key, sid, payload, job.dynamic, seed, resume),
                        timeout=_PING_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - that worker is gone too: try the next one
                with self._lock:
                    self._workers[wid][2] = False
                continue
            with self._lock:
                stream.worker = wid
                stream.version += 1
                return handle, stream.version
