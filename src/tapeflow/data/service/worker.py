"""A data worker (a Ray actor): runs the pipelines of job streams and serves their elements.

Each stream runs on its own thread: the dataset (unpickled: this worker's own copy) iterates
under a fixed seed, so unseeded shuffles and random maps draw the same values wherever the
stream runs, and (in `distributed_epoch`) its source reads the splits the dispatcher records
for the stream. Elements are numbered; a consumer fetches the positions it claimed. The thread
runs ahead of the highest position asked for by `LOOKAHEAD` elements and no further; elements
below the lowest unconfirmed claim are dropped (on a replay, they are computed and dropped).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from tapeflow.data import iterator_state
from tapeflow.data.service import cluster, splits
from tapeflow.framework import errors

LOOKAHEAD = 16


class _StreamRun:
    """One stream's pipeline on a thread, and the elements it made that await a fetch."""

    def __init__(self, payload: bytes, dynamic: bool, seed: int, resume_from: int,
                 provider: Any):
        import ray.cloudpickle as cloudpickle

        from tapeflow.data.iterator import IterContext

        dataset = cloudpickle.loads(payload)
        if dynamic:
            splits.install(dataset)
        self.ctx = IterContext(dataset.options(), iterator_state.Draws(dataset, seed),
                               provider if dynamic else None)
        self.dataset = dataset
        self.cond = threading.Condition()
        self.buffer: dict[int, Any] = {}
        self.produced = 0
        self.low = resume_from          # positions below were delivered: not kept
        self.demand = resume_from       # highest position + 1 a consumer asked for
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

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.buffer.clear()
            self.cond.notify_all()


class DataWorker:
    """Body of a data worker actor (threaded: fetches of several streams wait concurrently)."""

    def __init__(self, dispatcher_address: str, address: str):
        self._address = address
        self._dispatcher = cluster.lookup("dispatcher", dispatcher_address)
        self._streams: dict[tuple[str, int], _StreamRun] = {}
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

    def open_stream(self, job: str, sid: int, payload: bytes, dynamic: bool, seed: int,
                    resume_from: int) -> None:
        provider = splits.SplitProvider(self._dispatcher, job, sid)
        run = _StreamRun(payload, dynamic, seed, resume_from, provider)
        with self._lock:
            old = self._streams.pop((job, sid), None)
            self._streams[(job, sid)] = run
        if old is not None:
            old.close()

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

    def close_job(self, job: str) -> None:
        with self._lock:
            runs = [self._streams.pop(k) for k in list(self._streams) if k[0] == job]
        for run in runs:
            run.close()
