"""A data worker (a Ray actor): runs the pipelines of job streams and serves their elements.

Each stream runs on its own thread: the dataset (unpickled: this worker's own copy) iterates
under a fixed seed, so unseeded shuffles and random maps draw the same values wherever the
stream runs, and (in `distributed_epoch`) its source reads the splits the dispatcher records
for the stream. Elements are numbered; a consumer fetches the positions it claimed. The thread
runs ahead of the highest position asked for by `LOOKAHEAD` elements and no further; elements
below the lowest unconfirmed claim are dropped (on a replay, they are computed and dropped).

A cross-trainer cache stream keeps a sliding window of its elements instead (about
`CACHE_BYTES`, the oldest read ones dropped first) and one read position per trainer id: each
trainer reads every element still in the window from its position on; one that fell behind the
window (or joins late) continues at its oldest element. Consumers sharing a trainer id share the
position, so they split what they read.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from tapeflow.data import iterator_state, structure
from tapeflow.data.service import cluster, sharding, splits
from tapeflow.data.service.config import STATIC_POLICIES, ShardingPolicy
from tapeflow.framework import errors

LOOKAHEAD = 16
CACHE_BYTES = 1 << 30


class _StreamRun:
    """One stream's pipeline on a thread, and the elements it made that await a fetch."""

    def __init__(self, payload: bytes, policy: int, seed: int, resume_from: int,
                 provider: Any, shard: tuple[int, int] = (1, 0), cache_bytes: int | None = None):
        import ray.cloudpickle as cloudpickle

        from tapeflow.data.iterator import IterContext

        dataset = cloudpickle.loads(payload)
        policy = ShardingPolicy(policy)
        if policy is ShardingPolicy.DYNAMIC:
            splits.install(dataset)
        elif policy in STATIC_POLICIES:
            dataset = sharding.shard(dataset, policy, *shard)
        self.ctx = IterContext(dataset.options(), iterator_state.Draws(dataset, seed),
                               provider if policy is ShardingPolicy.DYNAMIC else None,
                               shard if policy is ShardingPolicy.HINT else None)
        self.dataset = dataset
        self.cond = threading.Condition()
        self.buffer: dict[int, Any] = {}
        self.produced = 0
        self.low = resume_from          # positions below were delivered: not kept
        self.demand = resume_from       # highest position + 1 a consumer asked for
        self.cache_bytes = cache_bytes  # a cross-trainer cache's window (None: not a cache)
        self.cached = 0                 # bytes in the window
        self.cursors: dict[str, int] = {}
        self.end: int | None = None
        self.error: BaseException | None = None
        self.closed = False
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="tf.data.service:stream")
        self.thread.start()

    def _run(self) -> None:
        gen = self.dataset._iterate(self.ctx)
        try:
            for element in gen:
                with self.cond:
                    while (not self.closed and self.produced >= self.low
                           and self.produced >= self.demand + LOOKAHEAD):
                        self.cond.wait()
                    if self.closed:
                        return
                    if self.produced >= self.low:
                        self.buffer[self.produced] = element
                    self.produced += 1
                    if self.cache_bytes is not None:
                        self._slide(element)
                    self.cond.notify_all()
            with self.cond:
                self.end = self.produced
                self.cond.notify_all()
        except BaseException as e:  # noqa: BLE001 - raised at the consumer that fetches
            with self.cond:
                self.error = e
                self.cond.notify_all()
        finally:
            gen.close()

    def fetch(self, start: int, count: int, low: int) -> tuple[list, int | None]:
        with self.cond:
            self.demand = max(self.demand, start + count)
            if low > self.low:
                for pos in [p for p in self.buffer if p < low]:
                    del self.buffer[pos]
                self.low = low
            self.cond.notify_all()
            while (self.produced < start + count and self.end is None
                   and self.error is None and not self.closed):
                self.cond.wait()
            if self.produced <= start and self.error is not None:
                raise self.error   # (elements made before the error are delivered first)
            if self.closed:
                raise errors.CancelledError("tf.data service: the job was released")
            stop = min(start + count, self.produced)
            try:
                items = [self.buffer.pop(pos) for pos in range(start, stop)]
            except KeyError:
                raise errors.InternalError(
                    f"tf.data service: positions [{start}, {stop}) of a stream were fetched "
                    f"twice") from None
            end = self.end if self.end is not None and self.end <= start + count else None
            return items, end

    def _slide(self, element: Any) -> None:
        """Add the newest element's bytes to the window; past the bound, drop the oldest
        elements the leading trainer has read (never one nobody has read yet)."""
        self.cached += structure.nbytes(element)
        self._evict()

    def _evict(self) -> None:
        lead = max(self.cursors.values(), default=0)
        while self.cached > self.cache_bytes and self.low < min(lead, self.produced - 1):
            self.cached -= structure.nbytes(self.buffer.pop(self.low))
            self.low += 1

    def fetch_shared(self, trainer: str, count: int) -> tuple[list, int | None]:
        """Up to `count` elements of the window from trainer `trainer`'s read position."""
        with self.cond:
            start = max(self.cursors.get(trainer, self.low), self.low)
            self.demand = max(self.demand, start + count)
            self.cond.notify_all()
            while (self.produced < start + count and self.end is None
                   and self.error is None and not self.closed):
                self.cond.wait()
            if self.produced <= start and self.error is not None:
                raise self.error
            if self.closed:
                raise errors.CancelledError("tf.data service: the job was released")
            start = max(start, self.low)   # the window may have moved on meanwhile
            stop = min(start + count, self.produced)
            items = [self.buffer[p] for p in range(start, stop)]
            self.cursors[trainer] = stop
            self._evict()
            end = self.end if self.end is not None and stop >= self.end else None
            return items, end

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.buffer.clear()
            self.cond.notify_all()


class DataWorker:
    """Body of a data worker actor (threaded: fetches of several streams wait concurrently)."""

    def __init__(self, dispatcher_address: str, address: str):
        self._address = address
        self._dispatcher_address = dispatcher_address
        self._dispatcher = cluster.lookup("dispatcher", dispatcher_address)
        self._streams: dict[tuple[str, int], _StreamRun] = {}
        self._datasets: dict[str, tuple[bytes, Any]] = {}   # id -> (payload, element spec)
        self._lock = threading.Lock()

    def register(self, handle: Any) -> int:
        import ray

        return ray.get(self._dispatcher.add_worker.remote(handle, self._address))

    def pid(self) -> int:
        return os.getpid()

    def ping(self) -> bool:
        return True

    def num_tasks(self) -> int:
        with self._lock:
            return sum(1 for s in self._streams.values() if s.end is None and not s.closed)

    def open_stream(self, job: str, sid: int, payload: bytes, policy: int, seed: int,
                    resume_from: int, dataset_id: str, num_streams: int,
                    cache: bool = False) -> None:
        provider = splits.SplitProvider(self._dispatcher_address, self._dispatcher, job, sid)
        run = _StreamRun(payload, policy, seed, resume_from, provider, (num_streams, sid),
                         CACHE_BYTES if cache else None)
        with self._lock:
            old = self._streams.pop((job, sid), None)
            self._streams[(job, sid)] = run
            self._datasets[dataset_id] = (payload, run.dataset.element_spec)
        if old is not None:
            old.close()

    def payload(self, dataset_id: str) -> bytes | None:
        """A pipeline this worker runs (for a dispatcher that restarted: journals hold no
        code)."""
        with self._lock:
            return self._datasets.get(dataset_id, (None, None))[0]

    def element_spec(self, dataset_id: str) -> Any:
        with self._lock:
            return self._datasets.get(dataset_id, (None, None))[1]

    def fetch(self, job: str, sid: int, start: int, count: int,
              low: int) -> tuple[list, int | None]:
        """Elements at positions [start, start + count) of a stream (fewer at its end) and
        the stream's length when this fetch reached it."""
        with self._lock:
            run = self._streams.get((job, sid))
        if run is None:
            raise errors.NotFoundError(f"tf.data service: worker {self._address} runs no "
                                       f"stream {sid} of {job}")
        return run.fetch(start, count, low)

    def fetch_shared(self, job: str, sid: int, trainer: str,
                     count: int) -> tuple[list, int | None]:
        """A cross-trainer cache read: the next elements of the stream's window for
        `trainer`, and the stream's length when this read reached it."""
        with self._lock:
            run = self._streams.get((job, sid))
        if run is None:
            raise errors.NotFoundError(f"tf.data service: worker {self._address} runs no "
                                       f"stream {sid} of {job}")
        return run.fetch_shared(trainer, count)

    def close_job(self, job: str) -> None:
        with self._lock:
            runs = [self._streams.pop(k) for k in list(self._streams) if k[0] == job]
        for run in runs:
            run.close()
