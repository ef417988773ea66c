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
from tapeflow.data.autotune import AUTOTUNE
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
        fn, stage, epoch = self._fn, self._stage, self._epochs.next()
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

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        autotuned = self._parallelism == AUTOTUNE
        tuner = ctx.tuner
        parallelism = tuner.initial_parallelism() if autotuned else self._parallelism
        stats = tuner.stage(f"ParallelMap({fn_name(self._fn)})", parallelism=parallelism,
                            parallelism_autotuned=autotuned, buffer_size=parallelism)
        deterministic = (ctx.options.is_deterministic if self._deterministic is None
                         else self._deterministic)
        run = _MapRun(self._inputs[0]._iterate(ctx), self._fn, stats, self._stage,
                      self._epochs.next())
        for _ in range(parallelism):
            run.add_worker()
        try:
            while True:
                slot = run.take(deterministic, tuner)
                if slot is None:
                    return
                if slot.error is not None:
                    raise slot.error
                yield slot.value
        finally:
            stats.finish()
            run.close()


class _Slot:
    __slots__ = ("done", "value", "error")

    def __init__(self):
        self.done = False
        self.value = None
        self.error = None


class _MapRun:
    """The shared state of one parallel map iterator: input, ordered result slots, workers."""

    def __init__(self, source: Iterator, fn: Callable, stats: Any, stage: int, epoch: int):
        self.source, self.fn, self.stats = source, fn, stats
        self.stage, self.epoch = stage, epoch
        self.cond = threading.Condition()
        self.input_lock = threading.Lock()
        self.slots: deque = deque()
        self.reserved = 0           # slots taken by workers, in flight or waiting to be consumed
        self.busy = 0               # workers running map_func right now
        self.index = 0
        self.end = False
        self.closed = False
        self.threads: list = []

    def add_worker(self) -> None:
        wid = len(self.threads)
        self.threads.append(workers.start_thread(self._work, wid, name=f"map-{wid}"))

    def _work(self, wid: int) -> None:
        cond, stats = self.cond, self.stats
        while True:
            with cond:
                while (not self.closed and not self.end and wid < stats.parallelism
                       and self.reserved >= stats.parallelism):
                    cond.wait()
                if self.closed or self.end or wid >= stats.parallelism:
                    return
                self.reserved += 1
            slot = _Slot()
            with self.input_lock:
                if self.end:
                    element = workers._END
                else:
                    try:
                        element = next(self.source, workers._END)
                    except BaseException as e:  # noqa: BLE001 - surfaced at the consumer
                        slot.error, slot.done = workers.annotate(e, "map input"), True
                        element = None
                index = self.index
                self.index += 1
                with cond:
                    if element is workers._END:
                        self.end = True
                        self.reserved -= 1
                        cond.notify_all()
                        return
                    self.slots.append(slot)
                    if slot.done:
                        self.end = True
                        cond.notify_all()
                        return
                    self.busy += 1
            self._run(slot, element, index)

    def _run(self, slot: _Slot, element: Any, index: int) -> None:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            slot.value = call_user_fn(self.fn, element, seed_offset(self.stage, self.epoch, index))
        except BaseException as e:  # noqa: BLE001 - surfaced at the consumer
            slot.error = workers.annotate(e, f"map function {fn_name(self.fn)}")
        self.stats.record_call(time.perf_counter() - start, time.thread_time() - cpu)
        size = 0 if slot.value is None else structure.nbytes(slot.value)
        with self.cond:
            slot.done = True
            self.busy -= 1
            self.stats.elements += 1
            self.stats.add_buffered(1, size)
            self.cond.notify_all()

    def take(self, deterministic: bool, tuner: Any) -> _Slot | None:
        """The next finished slot (the oldest one if deterministic); None at the end."""
        with self.cond:
            waited = None
            while True:
                slot = self._ready(deterministic)
                if slot is not None:
                    break
                if self.end and not self.slots:
                    return None
                if waited is None:
                    waited = time.perf_counter()
                    if tuner.maybe_grow_parallelism(self.stats, self.busy):
                        self.stats.buffer_size = self.stats.parallelism
                        self.add_worker()
                self.cond.wait()
            if waited is not None:
                self.stats.consumer_wait_s += time.perf_counter() - waited
            self.slots.remove(slot) if not deterministic else self.slots.popleft()
            self.reserved -= 1
            if slot.value is not None:
                self.stats.add_buffered(-1, -structure.nbytes(slot.value))
            self.cond.notify_all()
            return slot

    def _ready(self, deterministic: bool) -> _Slot | None:
        if not self.slots:
            return None
        if deterministic:
            return self.slots[0] if self.slots[0].done else None
        for slot in self.slots:
            if slot.done:
                return slot
        return None

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        workers.join(self.threads)
        self.source.close()


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
