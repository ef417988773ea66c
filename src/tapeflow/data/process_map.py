"""`Dataset.map(..., use_processes=True)`: the map function runs in worker processes.

For map functions that spend their time in Python bytecode (the GIL keeps worker threads from
running them in parallel). Elements and results move through shared memory (see
`tapeflow.data.process_pool`). Each iterator owns its pool: the workers start when iteration
starts and are stopped and joined when the iterator ends, is closed or is garbage-collected.
Results come in input order unless `deterministic=False`; per-element random seeds are the ones
the thread path uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from tapeflow.data import process_pool, structure
from tapeflow.data.autotune import AUTOTUNE
from tapeflow.data.dataset import Dataset
from tapeflow.data.mapping import MapDataset, fn_name, seed_offset

_END = object()


class ProcessMapDataset(MapDataset):
    """Map on `num_parallel_calls` worker processes (AUTOTUNE: one per core of the CPU budget);
    up to two elements per worker are in flight or waiting to be consumed, so workers rarely
    wait for the consumer and memory stays bounded when one element is slow."""

    def __init__(self, input_dataset: Dataset, map_func: Callable, num_parallel_calls: int,
                 deterministic: bool | None):
        super().__init__(input_dataset, map_func)
        self._fn_bytes = process_pool.pickle_function(map_func, fn_name(map_func))
        self._parallelism = num_parallel_calls
        self._deterministic = deterministic

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        autotuned = self._parallelism == AUTOTUNE
        size = ctx.tuner.initial_parallelism() if autotuned else self._parallelism
        label = fn_name(self._fn)
        stats = ctx.tuner.stage(f"ProcessMap({label})", parallelism=size,
                                parallelism_autotuned=autotuned, buffer_size=2 * size)
        deterministic = (ctx.options.is_deterministic if self._deterministic is None
                         else self._deterministic)
        stage, epoch = ctx.salt(self), ctx.epoch(self)
        source = self._inputs[0]._iterate(ctx)
        pool = None
        try:
            pool = process_pool.ProcessPool(self._fn_bytes, size, label)
            yield from run_pool(pool, source, stats, stage, epoch, deterministic, ctx.tuner)
        finally:
            stats.finish()
            if pool is not None:
                pool.close()
            source.close()


def run_pool(pool: process_pool.ProcessPool, source: Iterator, stats: Any, stage: int,
             epoch: int, deterministic: bool, tuner: Any, first: int = 0) -> Iterator[Any]:
    """Map the elements of `source` (numbered from `first`) on `pool`; up to two elements per
    worker are in flight or waiting to be consumed, fewer when the results expected (at the
    average result size so far) would take the pipeline past its RAM budget, and only one
    until the first result shows how large results are."""
    done: dict = {}    # index -> (value, error), results not yet yielded
    submitted = yielded = first
    limit = 2 * len(pool)
    end = False
    while True:
        while not end and pool.in_flight + len(done) < limit:
            pending = pool.in_flight + len(done)
            if pending and stats.elements == 0:
                break   # the size of a result is unknown until the first one arrives
            if pending and not tuner.admits(_average(stats) * (pool.in_flight + 1)):
                stats.held_by_budget(pending)
                break
            element = next(source, _END)
            if element is _END:
                end = True
                break
            pool.submit(submitted, seed_offset(stage, epoch, submitted), element)
            submitted += 1
        key = yielded if deterministic else next(iter(done), None)
        if key not in done:
            if pool.in_flight == 0:
                return
            stats.consumer_wait_s += receive(pool, done, stats)
            continue
        value, error = done.pop(key)
        yielded += 1
        if error is not None:
            raise error
        stats.add_buffered(-1, -structure.nbytes(value))
        yield value


def _average(stats: Any) -> int:
    """Average bytes of a result so far."""
    return stats.bytes_made // max(stats.elements, 1)


def receive(pool: process_pool.ProcessPool, done: dict, stats: Any) -> float:
    """Wait for one result and file it; returns the seconds waited."""
    start = time.perf_counter()
    index, value, error, wall_s, cpu_s = pool.receive()
    waited = time.perf_counter() - start
    stats.record_call(wall_s, cpu_s)
    stats.elements += 1
    if error is None:
        size = structure.nbytes(value)
        stats.bytes_made += size
        stats.add_buffered(1, size)
    done[index] = (value, error)
    return waited
