"""The dispatcher (a Ray actor): registered datasets, data workers, jobs, streams and splits.

A job runs one dataset for its consumers (trainers). It has one *stream* per data worker alive
when it started (under static sharding: per worker of `DispatcherConfig.worker_addresses`, in
that order): the dataset's elements as one worker produces them, numbered 0, 1, 2...
In `parallel_epochs` every stream is the whole dataset; in `distributed_epoch` each stream's
source reads the splits the dispatcher hands it (`split`), each split to one stream only; under
a static policy stream i runs shard i of n.

Exactly once, with workers that die: consumers *claim* a range of a stream's positions here
before fetching it from the worker, and acknowledge it with their next claim. Which split a
stream got at each request is recorded, and a stream's pipeline is deterministic given its
splits and its seed, so when a worker dies its streams move to a live worker that replays
them: it recomputes the elements before the lowest unacknowledged claim without keeping
them, and serves the claims from there. Every position is claimed by one consumer once, and
that consumer fetches it until it arrives, so each element is delivered exactly once.

Coordinated reads (`num_consumers`): round r is read from stream r mod S, consumer c taking
its element c of the round's `num_consumers`; consumers report the first round they have not
received, which is what a replay keeps. Cross-trainer cache jobs read a sliding window on each
worker without claims (worker.py).

Every state change is one record applied by `_apply`; with a journal (fault-tolerant mode) it
is written there first, and a new dispatcher on the same work_dir replays them (journal.py).
Claims carry (client, sequence number), so a claim retried after a restart gets its answer.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tapeflow.data.service import cluster, splits
from tapeflow.data.service.config import STATIC_POLICIES, ShardingPolicy
from tapeflow.data.service.journal import Journal
from tapeflow.framework import errors

_PING_TIMEOUT_S = 10.0
COMPACT_EVERY = 4096      # journal records between compactions


@dataclass
class _Stream:
    worker: int                                     # id of the worker producing it
    version: int = 0                                # bumped when it moves to another worker
    next_claim: int = 0
    unacked: dict = field(default_factory=dict)     # start -> count, claims not yet confirmed
    end: int | None = None                          # its length, once a consumer saw the end
    splits: dict = field(default_factory=dict)      # pass -> [split index handed out, ...]
    opened: bool = True                             # consumers read it (see add_worker)


@dataclass
class _Job:
    key: str
    dataset_id: str
    policy: int
    seed: int
    streams: dict = field(default_factory=dict)     # stream id -> _Stream
    next_split: dict = field(default_factory=dict)  # pass -> next split index to hand out
    num_splits: int = 0
    split_size: int = 1
    source_size: int = 0
    clients: set = field(default_factory=set)       # consumers reading it now
    num_consumers: int | None = None                # coordinated reads
    rounds: dict = field(default_factory=dict)      # consumer -> first round not received
    cache: bool = False                             # cross-trainer cache
    requests: dict = field(default_factory=dict)    # (client, stream) -> last claim answered

    @property
    def dynamic(self) -> bool:
        return self.policy == ShardingPolicy.DYNAMIC


class Dispatcher:
    """Body of the dispatcher actor (threaded: calls from workers and trainers interleave)."""

    def __init__(self, address: str, worker_addresses: list | None = None,
                 work_dir: str | None = None, compact_every: int = COMPACT_EVERY):
        self._address = address
        self._compact_every = compact_every
        self._grow_lock = threading.Lock()          # one worker at a time joins running jobs
        self._worker_addresses = None if worker_addresses is None else list(worker_addresses)
        self._lock = threading.RLock()
        self._datasets: dict[str, dict] = {}
        self._next_dataset = 1000
        self._workers: dict[int, list] = {}         # id -> [handle or None, address, alive]
        self._jobs: dict[str, _Job] = {}
        self._journal = None if work_dir is None else Journal(work_dir)
        if self._journal is not None:
            records = self._journal.records()
            for record in records:
                self._apply(record)
            if len(records) > 1:
                self._compact()   # a later restart replays one record, not this history

    def pid(self) -> int:
        return os.getpid()

    # ---- the state, one record at a time ---------------------------------------------------
    def _log(self, record: dict) -> None:
        """Journal (when fault tolerant) and apply one state change; caller holds the lock."""
        if self._journal is not None:
            self._journal.append(record)
        self._apply(record)
        if self._journal is not None and self._journal.appended >= self._compact_every:
            self._compact()

    def _compact(self) -> None:
        """Rewrite the journal as one `state` record (atomically; caller holds the lock)."""
        self._journal.rewrite([{"op": "state", **_encode_state(self)}])

    def _apply(self, r: dict) -> None:
        op = r["op"]
        if op == "state":
            _decode_state(self, r)
        elif op == "dataset":
            self._datasets[r["id"]] = {"payload": None, "spec": None,
                                       "fingerprint": r["fingerprint"],
                                       "source_size": r["source_size"]}
            if r["id"].isdigit():
                self._next_dataset = max(self._next_dataset, int(r["id"]) + 1)
        elif op == "worker":
            self._workers[r["id"]] = [None, r["address"], True]
        elif op == "dead":
            self._workers[r["id"]][2] = False
        elif op == "job":
            job = _Job(r["key"], r["dataset"], r["policy"], r["seed"],
                       source_size=r["source_size"], split_size=r["split_size"],
                       num_splits=r["num_splits"], num_consumers=r["num_consumers"],
                       cache=r["cache"], clients={r["client"]})
            job.streams = {sid: _Stream(wid) for sid, wid in r["streams"]}
            self._jobs[r["key"]] = job
        elif op == "join":
            self._jobs[r["key"]].clients.add(r["client"])
        elif op == "release":
            job = self._jobs.get(r["key"])
            if job is not None:
                job.clients.discard(r["client"])
                if not job.clients:
                    del self._jobs[r["key"]]
        elif op == "claim":
            job = self._jobs[r["key"]]
            stream = job.streams[r["sid"]]
            if r["ack"] is not None:
                stream.unacked.pop(r["ack"], None)
            if r["end"] is not None:
                stream.end = r["end"] if stream.end is None else min(stream.end, r["end"])
            if r["start"] is not None:
                stream.next_claim = r["start"] + r["count"]
                stream.unacked[r["start"]] = r["count"]
            job.requests[(r["client"], r["sid"])] = (r["seq"], r["start"], r["count"])
        elif op == "split":
            job = self._jobs[r["key"]]
            job.streams[r["sid"]].splits.setdefault(r["pass"], []).append(r["split"])
            job.next_split[r["pass"]] = r["split"] + 1
        elif op == "stream":   # a worker that joined the running job: hidden until opened
            self._jobs[r["key"]].streams[r["sid"]] = _Stream(r["worker"], opened=False)
        elif op == "opened":
            self._jobs[r["key"]].streams[r["sid"]].opened = True
        elif op == "move":
            stream = self._jobs[r["key"]].streams[r["sid"]]
            stream.worker = r["worker"]
            stream.version += 1
        elif op == "round":
            rounds = self._jobs[r["key"]].rounds
            rounds[r["consumer"]] = max(rounds.get(r["consumer"], 0), r["done"])
        else:
            raise errors.DataLossError(f"tf.data service dispatcher journal: unknown record "
                                       f"{op!r}")

    # ---- datasets and workers ------------------------------------------------------------
    def register_dataset(self, payload: bytes, spec: Any, fingerprint: str,
                         source_size: int, dataset_id: str | None) -> str:
        """The id of the dataset (the same id for the same pipeline registered again)."""
        with self._lock:
            if dataset_id is None:
                for key, entry in self._datasets.items():
                    if entry["fingerprint"] == fingerprint:
                        dataset_id = key
                        break
                else:
                    dataset_id = str(self._next_dataset)
            if dataset_id not in self._datasets:
                self._log({"op": "dataset", "id": dataset_id, "fingerprint": fingerprint,
                           "source_size": source_size})
            entry = self._datasets[dataset_id]
            if entry["payload"] is None:   # new, or known from the journal only
                entry["payload"], entry["spec"] = payload, spec
            return dataset_id

    def element_spec(self, dataset_id: str) -> Any:
        entry = self._dataset(dataset_id)
        if entry["spec"] is None:
            entry["spec"] = self._ask_workers("element_spec", dataset_id)
        return entry["spec"]

    def _dataset(self, dataset_id: str) -> dict:
        entry = self._datasets.get(dataset_id)
        if entry is None:
            raise errors.NotFoundError(f"tf.data service: dataset id {dataset_id!r} is not "
                                       f"registered with the dispatcher at {self._address}")
        return entry

    def _payload(self, dataset_id: str) -> bytes:
        entry = self._dataset(dataset_id)
        if entry["payload"] is None:
            entry["payload"] = self._ask_workers("payload", dataset_id)
        return entry["payload"]

    def _ask_workers(self, what: str, dataset_id: str) -> Any:
        """A restarted dispatcher has no pipelines (the journal holds no code): the workers
        running the dataset's streams give them back."""
        import ray

        for wid in self._live():
            try:
                got = ray.get(getattr(self._handle(wid), what).remote(dataset_id),
                              timeout=_PING_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - that worker cannot answer: ask the next
                continue
            if got is not None:
                return got
        raise errors.UnavailableError(
            f"tf.data service: the dispatcher restarted and no data worker runs dataset "
            f"{dataset_id} any more; register it again")

    def add_worker(self, handle: Any, address: str) -> int:
        """Register a data worker; it also joins the jobs already running that can take one
        more stream (see `_grow`)."""
        with self._grow_lock:
            with self._lock:
                wid = len(self._workers)
                self._log({"op": "worker", "id": wid, "address": address})
                self._workers[wid][0] = handle
                keys = [key for key, job in self._jobs.items() if _growable(job)]
            for key in keys:
                self._grow(key, wid, handle)
            return wid

    def _grow(self, key: str, wid: int, handle: Any) -> None:
        """Give running job `key` a stream on the new worker `wid`, as TensorFlow's dispatcher
        gives a new worker tasks of the running jobs: recorded hidden, opened on the worker,
        then shown to the consumers (they add it at their next claim). In `distributed_epoch`
        it takes the splits nobody has had yet; in `parallel_epochs` it is one more copy of the
        dataset. If the worker dies while opening it, the stream is shown anyway: the first
        fetch fails and the stream moves to a live worker like any other."""
        import ray

        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return
            sid = len(job.streams)
            self._log({"op": "stream", "key": key, "sid": sid, "worker": wid})
            args = (key, sid, job.policy, self._seed(job, sid), 0, job.dataset_id, sid + 1,
                    job.cache)
        try:
            payload = self._payload(job.dataset_id)
            ray.get(handle.open_stream.remote(args[0], args[1], payload, *args[2:]),
                    timeout=_PING_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - dead or unreachable: the stream will move
            with self._lock:
                if self._workers[wid][2]:
                    self._log({"op": "dead", "id": wid})
        with self._lock:
            if key in self._jobs:
                self._log({"op": "opened", "key": key, "sid": sid})
                return
        handle.close_job.remote(key)   # released meanwhile

    def _handle(self, wid: int) -> Any:
        """A worker's actor handle (looked up by address after a dispatcher restart)."""
        worker = self._workers[wid]
        if worker[0] is None:
            worker[0] = cluster.lookup("worker", worker[1], timeout_s=1.0)
        return worker[0]

    def _live(self) -> list:
        with self._lock:
            return [wid for wid, w in self._workers.items() if w[2]]

    def _check_workers(self) -> None:
        """Mark the workers that do not answer a ping as dead (before starting a job)."""
        import ray

        pings = []
        for wid in self._live():
            try:
                pings.append((wid, self._handle(wid).ping.remote()))
            except errors.NotFoundError:
                pings.append((wid, None))
        for wid, ref in pings:
            try:
                if ref is None:
                    raise errors.NotFoundError("gone")
                ray.get(ref, timeout=_PING_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - dead, unreachable or hung: not used
                with self._lock:
                    if self._workers[wid][2]:
                        self._log({"op": "dead", "id": wid})

    def num_workers(self) -> int:
        return len(self._live())

    # ---- jobs ------------------------------------------------------------------------------
    def open_job(self, dataset_id: str, policy: int, job_name: str | None, client: str,
                 num_consumers: int | None = None,
                 cache: bool = False) -> tuple[str, list] | None:
        """Join the job named `job_name` or start a new one: (job key, [stream ids]); None
        while the workers it needs are not (all) registered."""
        self._check_workers()
        policy = ShardingPolicy(policy)
        with self._lock:
            entry = self._dataset(dataset_id)
            if policy is ShardingPolicy.DYNAMIC and entry["source_size"] < 0:
                raise errors.InvalidArgumentError(
                    f"tf.data service distributed_epoch: dataset {dataset_id} has no source "
                    f"that can be split (from_tensor_slices or range)")
            key = job_name if job_name is not None else f"job-{client}"
            job = self._jobs.get(key)
            if job is not None:
                if client not in job.clients:
                    self._log({"op": "join", "key": key, "client": client})
                return key, _opened(job)
            live = self._static_workers(policy) if policy in STATIC_POLICIES else self._live()
            if not live:
                return None
            n = entry["source_size"] if policy is ShardingPolicy.DYNAMIC else 0
            size = splits.split_size(n, len(live))
            self._log({"op": "job", "key": key, "dataset": dataset_id, "policy": int(policy),
                       "seed": int(np.random.default_rng().integers(1 << 62)),
                       "source_size": n, "split_size": size, "num_splits": -(-n // size),
                       "num_consumers": num_consumers, "cache": bool(cache), "client": client,
                       "streams": list(enumerate(live))})
            job = self._jobs[key]
        starts = [(self._handle(s.worker), sid) for sid, s in job.streams.items()]
        payload = self._payload(dataset_id)
        import ray

        ray.get([handle.open_stream.remote(key, sid, payload, int(policy), self._seed(job, sid),
                                           0, dataset_id, len(starts), job.cache)
                 for handle, sid in starts])
        return key, list(job.streams)

    def _static_workers(self, policy: ShardingPolicy) -> list:
        """Worker ids in the order of `worker_addresses` ([] until all have registered)."""
        if self._worker_addresses is None:
            raise errors.FailedPreconditionError(
                None, None, f"tf.data service: static sharding (ShardingPolicy.{policy.name}) "
                f"needs the fixed list of workers in DispatcherConfig(worker_addresses=[...])")
        live = self._live()
        chosen = []
        for pattern in self._worker_addresses:
            match = [wid for wid in live if _address_matches(pattern, self._workers[wid][1])
                     and wid not in chosen]
            if not match:
                return []
            chosen.append(match[-1])   # the latest registration of a restarted worker
        return chosen

    @staticmethod
    def _seed(job: _Job, sid: int) -> int:
        return hash((job.seed, sid)) & (2**62 - 1)

    def _job(self, key: str) -> _Job:
        job = self._jobs.get(key)
        if job is None:
            raise errors.NotFoundError(
                f"tf.data service: the dispatcher at {self._address} has no job {key!r} (it "
                f"was restarted without fault_tolerant_mode, or the job ended)")
        return job

    def release(self, key: str, client: str) -> None:
        """A consumer is done with the job; the last one ends it and frees the workers."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None or client not in job.clients:
                return
            self._log({"op": "release", "key": key, "client": client})
            if key in self._jobs:
                return
            handles = []
            for wid in self._live():
                try:
                    handles.append(self._handle(wid))
                except errors.NotFoundError:
                    continue
        for handle in handles:
            handle.close_job.remote(key)

    # ---- claims ----------------------------------------------------------------------------
    def claim(self, key: str, sid: int, count: int, ack: int | None, end: int | None,
              client: str, seq: int) -> tuple | None:
        """Confirm the consumer's previous claim on the stream (`ack`: its start; `end`: the
        stream's length if the fetch saw it) and claim the next `count` positions:
        ((start, count, lowest unconfirmed start, worker handle, stream version), or None when
        the stream has ended; the job's streams a consumer may read, which grow when a worker
        joins). The same (client, seq) again gets the same claim."""
        with self._lock:
            job = self._job(key)
            stream = job.streams[sid]
            previous = job.requests.get((client, sid))
            if previous is None or previous[0] != seq:
                ends = [e for e in (stream.end, end) if e is not None]
                start = None if ends and stream.next_claim >= min(ends) else stream.next_claim
                self._log({"op": "claim", "key": key, "sid": sid, "ack": ack, "end": end,
                           "start": start, "count": count, "client": client, "seq": seq})
                previous = job.requests[(client, sid)]
            _, start, count = previous
            if start is None:
                return None, _opened(job)
            return ((start, count, min(stream.unacked, default=start),
                     self._handle(stream.worker), stream.version), _opened(job))

    def worker_of(self, key: str, sid: int) -> tuple[Any, int]:
        """(worker handle, version) of a stream (cross-trainer cache reads claim nothing)."""
        with self._lock:
            stream = self._job(key).streams[sid]
            return self._handle(stream.worker), stream.version

    def round(self, key: str, consumer: int, r: int, done: int) -> tuple | None:
        """Coordinated reads: where consumer `consumer` reads round `r` (stream, position,
        lowest position any consumer still needs there, worker handle, stream version), after
        noting that it has received every round before `done`. None past the stream's end."""
        with self._lock:
            job = self._job(key)
            if done > job.rounds.get(consumer, 0):
                self._log({"op": "round", "key": key, "consumer": consumer, "done": done})
            sid = r % len(job.streams)
            stream = job.streams[sid]
            position = r // len(job.streams) * job.num_consumers + consumer
            if stream.end is not None and position >= stream.end:
                return None
            return (sid, position, self._coordinated_low(job, sid), self._handle(stream.worker),
                    stream.version)

    @staticmethod
    def _coordinated_low(job: _Job, sid: int) -> int:
        """The lowest position of stream `sid` that some consumer has yet to receive."""
        n_streams, n = len(job.streams), job.num_consumers
        low = None
        for c in range(n):
            first = job.rounds.get(c, 0)
            q = max(0, -(-(first - sid) // n_streams))   # its first round on this stream
            pos = q * n + c
            low = pos if low is None else min(low, pos)
        return low or 0

    # ---- splits ----------------------------------------------------------------------------
    def split(self, key: str, sid: int, epoch: int, index: int) -> tuple[int, int] | None:
        """The `index`-th split of pass `epoch` of a stream: the one recorded for it, else the
        next one nobody has had; None when the pass has no more."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return None   # the job was released; its streams are being closed
            record = job.streams[sid].splits.get(epoch, [])
            if index < len(record):
                split = record[index]
            else:
                split = job.next_split.get(epoch, 0)
                if split >= job.num_splits:
                    return None
                self._log({"op": "split", "key": key, "sid": sid, "pass": epoch,
                           "split": split})
            start = split * job.split_size
            return start, min(start + job.split_size, job.source_size)

    # ---- failures --------------------------------------------------------------------------
    def reassign(self, key: str, sid: int, version: int) -> tuple[Any, int]:
        """The stream's worker died (a consumer's fetch failed at `version`): replay the
        stream on a live worker. Returns (worker handle, version) to fetch from."""
        import ray

        while True:
            with self._lock:
                job = self._job(key)
                stream = job.streams[sid]
                if stream.version != version:   # another consumer moved it already
                    return self._handle(stream.worker), stream.version
                if self._workers[stream.worker][2]:
                    self._log({"op": "dead", "id": stream.worker})
                live = self._live()
                if not live:
                    raise errors.UnavailableError(
                        f"tf.data service: the data worker running stream {sid} of {key} "
                        f"died and no other worker is alive to take it over")
                load = {wid: 0 for wid in live}
                for s in job.streams.values():
                    if s.worker in load:
                        load[s.worker] += 1
                wid = min(live, key=load.__getitem__)
                resume = self._resume_point(job, sid)
                seed = self._seed(job, sid)
            try:
                payload = self._payload(job.dataset_id)
                handle = self._handle(wid)
                ray.get(handle.open_stream.remote(key, sid, payload, job.policy, seed, resume,
                                                  job.dataset_id, len(job.streams), job.cache),
                        timeout=_PING_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - that worker is gone too: try the next one
                with self._lock:
                    if self._workers[wid][2]:
                        self._log({"op": "dead", "id": wid})
                continue
            with self._lock:
                self._log({"op": "move", "key": key, "sid": sid, "worker": wid})
                return handle, stream.version

    def _resume_point(self, job: _Job, sid: int) -> int:
        """The first position of a replayed stream that a consumer may still fetch."""
        if job.cache:
            return 0
        if job.num_consumers is not None:
            return self._coordinated_low(job, sid)
        stream = job.streams[sid]
        return min([*stream.unacked, stream.next_claim])


def _encode_state(d: Dispatcher) -> dict:
    """The dispatcher's state as JSON values (for a compacted journal; no handles, no
    pipelines: those come back as after any restart)."""
    return {
        "datasets": [[k, v["fingerprint"], v["source_size"]] for k, v in d._datasets.items()],
        "next_dataset": d._next_dataset,
        "workers": [[wid, w[1], w[2]] for wid, w in d._workers.items()],
        "jobs": [{
            "key": job.key, "dataset": job.dataset_id, "policy": int(job.policy),
            "seed": job.seed, "num_splits": job.num_splits, "split_size": job.split_size,
            "source_size": job.source_size, "clients": sorted(job.clients),
            "num_consumers": job.num_consumers, "cache": job.cache,
            "next_split": list(job.next_split.items()), "rounds": list(job.rounds.items()),
            "requests": [[c, sid, *answer] for (c, sid), answer in job.requests.items()],
            "streams": [[sid, st.worker, st.version, st.next_claim, list(st.unacked.items()),
                         st.end, list(st.splits.items()), st.opened]
                        for sid, st in job.streams.items()],
        } for job in d._jobs.values()],
    }


def _decode_state(d: Dispatcher, r: dict) -> None:
    """Replace the dispatcher's state by an `_encode_state` record."""
    d._datasets = {k: {"payload": None, "spec": None, "fingerprint": f, "source_size": n}
                   for k, f, n in r["datasets"]}
    d._next_dataset = r["next_dataset"]
    d._workers = {wid: [None, address, alive] for wid, address, alive in r["workers"]}
    d._jobs = {}
    for j in r["jobs"]:
        job = _Job(j["key"], j["dataset"], j["policy"], j["seed"], num_splits=j["num_splits"],
                   split_size=j["split_size"], source_size=j["source_size"],
                   clients=set(j["clients"]), num_consumers=j["num_consumers"],
                   cache=j["cache"], next_split=dict(j["next_split"]), rounds=dict(j["rounds"]),
                   requests={(c, sid): (seq, start, count)
                             for c, sid, seq, start, count in j["requests"]})
        job.streams = {sid: _Stream(worker, version, next_claim, dict(unacked), end,
                                    dict(splits), opened)
                       for sid, worker, version, next_claim, unacked, end, splits, opened
                       in j["streams"]}
        d._jobs[job.key] = job


def _growable(job: _Job) -> bool:
    """Whether a worker that registers while `job` runs gets a stream of it: not under static
    sharding (n shards fixed), coordinated reads (rounds cycle over a fixed set of streams) or
    a cross-trainer cache."""
    return (job.policy in (ShardingPolicy.OFF, ShardingPolicy.DYNAMIC)
            and job.num_consumers is None and not job.cache)


def _opened(job: _Job) -> list:
    """The stream ids consumers read (all but one a joining worker is still opening)."""
    return [sid for sid, stream in job.streams.items() if stream.opened]


def _address_matches(pattern: str, address: str) -> bool:
    """TensorFlow's worker_addresses forms: "host:port", "host", "host:%port%"."""
    host = address.rsplit(":", 1)[0]
    if pattern == address or pattern == host:
        return True
    return pattern.endswith(":%port%") and pattern[:-len(":%port%")] == host
