"""`map` (sequential and on a pool of worker threads) and `filter`.

User functions run eagerly on eager tensors. Around each call the thread-local
`tapeflow.framework.context.state.seed_offset` is set to a number derived from the map stage,
the epoch and the element index, so random ops inside `map_func` draw per-element seeds that do
not depend on which worker thread ran the call.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow.data import structure, workers
from tapeflow.data.autotune import AUTOTUNE, queued_s
from tapeflow.data.dataset import Dataset, _EpochCounter
from tapeflow.framework import errors
from tapeflow.framework.context import state as _context
from tapeflow.ops import random_ops

_stage_ids = itertools.count(1)


def stage_salt() -> int:
    """Distinguishes map stages: drawn from the global seed's counter when one is set (so the
    same program gives the same per-element seeds), otherwise just a fresh number."""
    seed = random_ops.next_seed(None)
    return next(_stage_ids) if seed is None else seed


def seed_offset(stage: int, epoch: int, index: int) -> int:
    """A per-element number random ops mix into their seed (stage, epoch and index distinct)."""
    return hash((stage, epoch, index)) & (2**63 - 1)


def call_user_fn(fn: Callable, element: Any, offset: int | None) -> Any:
    """Run `fn` on one element with the per-element seed offset set; returns internal form."""
    previous = _context.seed_offset
    _context.seed_offset = offset
    try:
        out = structure.call_with_element(fn, element)
    finally:
        _context.seed_offset = previous
    return structure.normalize(out, lists_are_tuples=True)


def fn_name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def probe_output(input_dataset: Dataset, fn: Callable) -> Any:
    """Run `fn` on the input's first element (how an eager pipeline learns its element_spec)."""
    from tapeflow.data.iterator import IterContext

    gen = input_dataset._iterate(IterContext(input_dataset.options()))
    try:
        first = next(gen, None)
        if first is None:
            return None
        return call_user_fn(fn, first, None)
    finally:
        gen.close()


class MapDataset(Dataset):
    """Sequential map on the consumer's thread."""

    def __init__(self, input_dataset: Dataset, map_func: Callable):
        if not callable(map_func):
            raise TypeError(f"map(): map_func must be callable, got {type(map_func).__name__}\n"
                            f"{errors.user_line()}")
        self._inputs = (input_dataset,)
        self._fn = map_func
        self._stage = stage_salt()
        self._epochs = _EpochCounter()

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        fn, stage, epoch = self._fn, ctx.salt(self), ctx.epoch(self)
        source = self._inputs[0]._iterate(ctx)
        try:
            for index, element in enumerate(source):
                yield call_user_fn(fn, element, seed_offset(stage, epoch, index))
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        out = probe_output(self._inputs[0], self._fn)
        return None if out is None else _spec_of_output(out)

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()


def _spec_of_output(out: Any) -> Any:
    return structure.map_structure(
        lambda a: a.element_spec if isinstance(a, Dataset) else structure.spec_of(a), out)


class ParallelMapDataset(MapDataset):
    """Map on `num_parallel_calls` worker threads; results in input order if deterministic."""

    def __init__(self, input_dataset: Dataset, map_func: Callable, num_parallel_calls: int,
                 deterministic: bool | None):
        super().__init__(input_dataset, map_func)
        self._parallelism = num_parallel_calls
        self._deterministic = deterministic
        self._tune_fn = map_func    # AUTOTUNE's search is kept per this function (and shape)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        autotuned = self._parallelism == AUTOTUNE
        tuner = ctx.tuner
        parallelism = tuner.initial_parallelism() if autotuned else self._parallelism
        stats = tuner.stage(f"ParallelMap({fn_name(self._fn)})", parallelism=parallelism,
                            parallelism_autotuned=autotuned, buffer_size=parallelism)
        deterministic = (ctx.options.is_deterministic if self._deterministic is None
                         else self._deterministic)
        run = _MapRun(self._inputs[0]._iterate(ctx), self._fn, stats, ctx.salt(self),
                      ctx.epoch(self), tuner, tune_key=(self._tune_fn, pipeline_shape(self)))
        try:
            yield from run_threads(run, deterministic)
        finally:
            stats.finish()


def pipeline_shape(ds: Dataset) -> tuple:
    """Type names from `ds` down its first inputs: passes over pipelines of the same shape
    around the same map function share AUTOTUNE's measurements."""
    names = []
    while ds is not None:
        names.append(type(ds).__name__)
        inputs = getattr(ds, "_inputs", ())
        ds = inputs[0] if inputs else None
    return tuple(names)


def run_threads(run: _MapRun, deterministic: bool) -> Iterator[Any]:
    """Start `run.stats.parallelism` workers on `run` and yield its results; closes `run` at
    the end."""
    try:
        for _ in range(run.stats.parallelism):
            run.add_worker()
        while True:
            chunk = run.take(deterministic)
            if chunk is None:
                return
            yield from chunk.values
            if chunk.error is not None:
                raise chunk.error
    finally:
        run.close()


# A chunk of consecutive elements should take about this long to map: long enough that the
# per-chunk hand-off (locks, thread wake-ups: tens of microseconds) is a small share of it,
# short enough that the consumer sees results soon. Expensive functions get chunks of one.
_CHUNK_TARGET_S = 1e-3
_MAX_CHUNK = 32


class _Chunk:
    """Consecutive input elements mapped by one worker and handed to the consumer at once."""

    __slots__ = ("done", "values", "error", "nbytes")

    def __init__(self):
        self.done = False
        self.values: list = []
        self.error: BaseException | None = None
        self.nbytes = 0


class _MapRun:
    """The shared state of one parallel map iterator: input, ordered result chunks, workers.

    Workers take a chunk of input elements per lock acquisition (its length follows the measured
    cost of reading and mapping an element) and publish the mapped chunk at once; the consumer
    yields a whole chunk without touching the lock. Workers and consumer wait on separate
    conditions of one lock, so each hand-off wakes only the side that can act on it."""

    def __init__(self, source: Iterator, fn: Callable, stats: Any, stage: int, epoch: int,
                 tuner: Any, first_index: int = 0, tune_key: tuple | None = None):
        self.source, self.fn, self.stats, self.tuner = source, fn, stats, tuner
        self.stage, self.epoch = stage, epoch
        lock = threading.Lock()
        self.work_ready = threading.Condition(lock)     # workers wait: room for a chunk
        self.result_ready = threading.Condition(lock)   # consumer waits: a chunk finished
        self.input_lock = threading.Lock()
        self.chunks: deque = deque()
        self.reserved = 0           # chunks taken by workers, in flight or waiting to be consumed
        self.busy = 0               # workers running map_func right now
        self.index = first_index    # of the next input element (per-element seeds follow it)
        self.first_index = first_index
        self.read_s = 0.0           # time spent reading the input (under input_lock)
        self.end = False
        self.closed = False
        self.threads: list = []
        self.alive: set = set()     # ids of running workers (those >= parallelism stop)
        self.bytes_out = 0          # bytes of all mapped elements so far (for the RAM budget)
        self.search = (tuner.parallelism_search(stats) if tune_key is None
                       else tuner.parallelism_search(stats, *tune_key))

    def add_worker(self) -> None:
        """Start a worker with the lowest id not running (caller holds the lock, or no
        worker runs yet)."""
        wid = min(set(range(len(self.alive) + 1)) - self.alive)
        self.alive.add(wid)
        self.threads.append(workers.start_thread(self._work, wid, name=f"map-{wid}"))

    def _retune(self) -> None:
        """Apply the throughput search's verdict (consumer side, lock held)."""
        p = self.search.observe() if self.search is not None else None
        if p is None:
            return
        self.stats.buffer_size = p
        while len(self.alive) < p:
            self.add_worker()
        self.work_ready.notify_all()   # workers numbered p and up stop

    def _chunk_bytes(self) -> int:
        """Bytes a chunk of mapped elements is expected to hold (by the averages so far)."""
        stats = self.stats
        if stats.elements == 0:
            return 0
        return self.bytes_out // stats.elements * self._chunk_size()

    def _chunk_size(self) -> int:
        """Elements per chunk: about `_CHUNK_TARGET_S` of reading and mapping, by the averages
        so far (one until something is measured, so slow inputs and functions stream)."""
        stats = self.stats
        read = self.index - self.first_index
        if stats.elements == 0 or read == 0:
            return 1
        per_element = stats.busy_s / stats.elements + self.read_s / read
        if per_element <= 0:
            return _MAX_CHUNK
        return max(1, min(_MAX_CHUNK, int(_CHUNK_TARGET_S / per_element)))

    def _work(self, wid: int) -> None:
        try:
            self._work_loop(wid)
        finally:
            with self.work_ready:
                self.alive.discard(wid)

    def _work_loop(self, wid: int) -> None:
        cond, stats = self.work_ready, self.stats
        while True:
            with cond:
                while not self.closed and not self.end and wid < stats.parallelism:
                    if self.reserved >= stats.parallelism:
                        cond.wait()
                    elif self.reserved and not self.tuner.admits(
                            (self.reserved + 1) * self._chunk_bytes() - stats.buffered_bytes):
                        stats.held_by_budget(self.reserved)
                        cond.wait(workers._BUDGET_POLL_S)
                    else:
                        break
                if self.closed or self.end or wid >= stats.parallelism:
                    return
                self.reserved += 1
                size = self._chunk_size()
            chunk = _Chunk()
            elements = []
            with self.input_lock:
                started = time.perf_counter()
                if not self.end:
                    try:
                        for _ in range(size):
                            element = next(self.source, workers._END)
                            if element is workers._END:
                                break
                            elements.append(element)
                    except BaseException as e:  # noqa: BLE001 - surfaced at the consumer
                        chunk.error = workers.annotate(e, "map input")
                first = self.index
                self.index += len(elements)
                self.read_s += time.perf_counter() - started
                with cond:
                    if len(elements) < size or chunk.error is not None:
                        self.end = True
                        cond.notify_all()
                    if not elements and chunk.error is None:
                        self.reserved -= 1
                        self.result_ready.notify()
                        return
                    self.chunks.append(chunk)
                    self.busy += 1
            self._run(chunk, elements, first)

    def _run(self, chunk: _Chunk, elements: list, first: int) -> None:
        fn, stage, epoch = self.fn, self.stage, self.epoch
        start, cpu, queued = time.perf_counter(), time.thread_time(), queued_s()
        try:  # elements read before an input error are mapped and yielded before it
            for index, element in enumerate(elements, first):
                chunk.values.append(call_user_fn(fn, element, seed_offset(stage, epoch, index)))
        except BaseException as e:  # noqa: BLE001 - surfaced at the consumer
            chunk.error = workers.annotate(e, f"map function {fn_name(fn)}")
        self.stats.record_call(time.perf_counter() - start, time.thread_time() - cpu,
                               queued_s() - queued)
        chunk.nbytes = sum(structure.nbytes(v) for v in chunk.values)
        with self.result_ready:
            self.bytes_out += chunk.nbytes
            chunk.done = True
            self.busy -= 1
            self.stats.elements += len(chunk.values)
            self.stats.add_buffered(len(chunk.values), chunk.nbytes)
            self.result_ready.notify()
            if chunk.error is not None:
                self.end = True
                self.work_ready.notify_all()

    def take(self, deterministic: bool) -> _Chunk | None:
        """The next finished chunk (the oldest one if deterministic); None at the end."""
        with self.result_ready:
            waited = None
            while True:
                chunk = self._ready(deterministic)
                if chunk is not None:
                    break
                if self.end and not self.chunks:
                    return None
                if waited is None:
                    waited = time.perf_counter()
                self.result_ready.wait()
            if waited is not None:
                self.stats.consumer_wait_s += time.perf_counter() - waited
            self.chunks.popleft() if deterministic else self.chunks.remove(chunk)
            self.reserved -= 1
            self.stats.add_buffered(-len(chunk.values), -chunk.nbytes)
            self._retune()
            self.work_ready.notify()
            return chunk

    def _ready(self, deterministic: bool) -> _Chunk | None:
        if not self.chunks:
            return None
        if deterministic:
            return self.chunks[0] if self.chunks[0].done else None
        for chunk in self.chunks:
            if chunk.done:
                return chunk
        return None

    def close(self) -> None:
        with self.work_ready:
            self.closed = True
            self.work_ready.notify_all()
        workers.join(self.threads)
        self.source.close()
        if self.search is not None:
            self.search.detach()


class FilterDataset(Dataset):
    """Keep elements whose predicate is a scalar True."""

    def __init__(self, input_dataset: Dataset, predicate: Callable):
        if not callable(predicate):
            raise TypeError(f"filter(): predicate must be callable\n{errors.user_line()}")
        self._inputs = (input_dataset,)
        self._predicate = predicate

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        predicate = self._predicate
        source = self._inputs[0]._iterate(ctx)
        try:
            for element in source:
                keep = structure.to_array(structure.call_with_element(predicate, element))
                if keep.shape != () or keep.dtype != np.bool_:
                    raise TypeError(f"filter(): predicate {fn_name(predicate)} must return a "
                                    f"scalar bool, got dtype {keep.dtype} shape {keep.shape}")
                if keep:
                    yield element
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        return self._inputs[0].element_spec
