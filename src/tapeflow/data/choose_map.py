"""`map(f, num_parallel_calls, use_processes=AUTOTUNE)`: threads or processes, by measurement.

Worker threads run a map function in parallel only while it releases the GIL (NumPy, numba
`nogil` kernels, I/O, sleeping); a function that spends its time in Python bytecode runs one
call at a time however many threads there are, and only worker processes run it in parallel,
at the price of moving elements through shared memory. Which one is faster depends on the
function, the element sizes and what else the machine runs, so the stage measures it instead
of guessing: it maps batches of the first elements alternately on `parallelism` threads and
on `parallelism` processes (paired rounds, so a change in the machine's load hits both),
timing the map alone (results are yielded between the timed batches, so the consumer's work is
not timed), and keeps the faster for the rest of the pass.
Processes must be `MARGIN` times faster to win: threads keep side effects in this process
and cost no start-up. The choice, with both rates, is in `autotune_report()`.

A first batch of 2 x parallelism elements each is not timed (workers start), then paired
rounds of batches of that size run until at least `MIN_ROUNDS` rounds and `TRIAL_S` seconds
were timed (or `TRIAL_MAX` elements); processes win when both the median of the rounds'
process/thread rate ratios (which one slow moment cannot swing) and the ratio of the best
rates (which a slow stretch on one side cannot swing) exceed `MARGIN`. Order and seeds are
those of the plain parallel map. A function that cannot be pickled stays on threads (noted).
The process pool's start-up is not timed (it is paid once per pass, not per element).

Opt-in rather than the default for AUTOTUNE maps, because processes change what a function's
side effects reach (a list appended to in `map_func` stays empty in the consumer's process).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tapeflow.data import process_map, process_pool, structure
from tapeflow.data.autotune import AUTOTUNE
from tapeflow.data.dataset import Dataset
from tapeflow.data.mapping import (
    MapDataset,
    _MapRun,
    call_user_fn,
    fn_name,
    pipeline_shape,
    run_threads,
    seed_offset,
)

TRIAL_S = 0.3
MIN_ROUNDS = 5
TRIAL_MAX = 2048
MARGIN = 1.15


class ChoosingMapDataset(MapDataset):
    """A parallel map that measures threads against processes and keeps the faster."""

    def __init__(self, input_dataset: Dataset, map_func: Callable, num_parallel_calls: int,
                 deterministic: bool | None):
        super().__init__(input_dataset, map_func)
        self._parallelism = num_parallel_calls
        self._deterministic = deterministic
        try:
            self._fn_bytes: bytes | None = process_pool.pickle_function(map_func,
                                                                        fn_name(map_func))
        except TypeError:
            self._fn_bytes = None

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        tuner = ctx.tuner
        autotuned = self._parallelism == AUTOTUNE
        size = tuner.initial_parallelism() if autotuned else self._parallelism
        label = fn_name(self._fn)
        stats = tuner.stage(f"ChoosingMap({label})", parallelism=size,
                            parallelism_autotuned=autotuned, buffer_size=size)
        deterministic = (ctx.options.is_deterministic if self._deterministic is None
                         else self._deterministic)
        trial = _Trial(self._fn, ctx.salt(self), ctx.epoch(self), stats)
        source = self._inputs[0]._iterate(ctx)
        pool = None
        try:
            if self._fn_bytes is None:
                stats.notes.append("threads: map_func cannot be pickled for processes")
            else:
                pool = process_pool.ProcessPool(self._fn_bytes, size, label)
                with ThreadPoolExecutor(size, thread_name_prefix="tf.data:trial") as threads:
                    yield from trial.run(source, (
                        lambda batch, first: _on_threads(threads, trial, batch, first),
                        lambda batch, first: _on_pool(pool, trial, batch, first)))
                use_pool = trial.ratio > MARGIN and trial.best_ratio() > MARGIN
                stats.notes.append(f"{'processes' if use_pool else 'threads'}: {trial.summary()}")
                if use_pool:
                    stats.name = f"ChoosingMap({label}) -> processes"
                    yield from process_map.run_pool(pool, source, stats, trial.stage,
                                                    trial.epoch, deterministic, tuner,
                                                    trial.index)
                    return
                pool.close()
                pool = None
            stats.name = f"ChoosingMap({label}) -> threads"
            run = _MapRun(source, self._fn, stats, trial.stage, trial.epoch, tuner,
                          first_index=trial.index, tune_key=(self._fn, pipeline_shape(self)))
            yield from run_threads(run, deterministic)
        finally:
            stats.finish()
            if pool is not None:
                pool.close()
            source.close()


class _Trial:
    """Paired timed rounds of mapping on threads and on processes; `index` numbers the input
    elements read so far."""

    def __init__(self, fn: Callable, stage: int, epoch: int, stats: Any):
        self.fn, self.stage, self.epoch, self.stats = fn, stage, epoch, stats
        self.index = 0
        self.rates: list[tuple[float, float]] = []   # per round: (threads, processes) el/s
        self.ratio = 0.0

    def run(self, source: Iterator, runners: tuple) -> Iterator[Any]:
        """Map batches with each `runner(elements, first_index) -> (values, error)` in turn
        (a first untimed batch each, then timed rounds) and yield the values between the
        timed calls."""
        n = 2 * max(self.stats.parallelism, 1)
        timed, count, rounds = 0.0, 0, -1
        while rounds < MIN_ROUNDS or (timed < TRIAL_S and count < TRIAL_MAX):
            rates = []
            for runner in runners:
                batch = list(itertools.islice(source, n))
                if not batch:
                    break
                start = time.perf_counter()
                values, error = runner(batch, self.index)
                seconds = max(time.perf_counter() - start, 1e-9)
                rates.append(len(batch) / seconds)
                self.index += len(batch)
                self.stats.elements += len(values)
                if rounds >= 0:
                    timed += seconds
                    count += len(batch)
                yield from values
                if error is not None:
                    raise error
            if len(rates) < len(runners):
                break
            if rounds >= 0:
                self.rates.append(tuple(rates))
            rounds += 1
        ratios = sorted(p / t for t, p in self.rates)
        self.ratio = ratios[len(ratios) // 2] if ratios else 0.0

    def best_ratio(self) -> float:
        """Best process rate over best thread rate: a stall only ever slows a round down, so
        the best rounds show what each can do when nothing else interferes."""
        if not self.rates:
            return 0.0
        return max(p for _, p in self.rates) / max(t for t, _ in self.rates)

    def summary(self) -> str:
        if not self.rates:
            return "too few elements to measure"
        threads = max(t for t, _ in self.rates)
        procs = max(p for _, p in self.rates)
        return (f"processes/threads x{self.ratio:.2f} (median of {len(self.rates)} paired "
                f"rounds; best threads {threads:,.0f}/s, processes {procs:,.0f}/s)")


def _on_threads(threads: ThreadPoolExecutor, trial: _Trial, batch: list,
                first: int) -> tuple[list, BaseException | None]:
    def call(i: int, element: Any) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return call_user_fn(trial.fn, element, seed_offset(trial.stage, trial.epoch, i))
        finally:
            trial.stats.record_call(time.perf_counter() - start, time.thread_time() - cpu)

    futures = [threads.submit(call, i, e) for i, e in enumerate(batch, first)]
    values: list = []
    for f in futures:
        try:
            values.append(f.result())
        except BaseException as e:  # noqa: BLE001 - raised after the values before it
            for rest in futures:
                rest.cancel()
            return values, e
    return values, None


def _on_pool(pool: process_pool.ProcessPool, trial: _Trial, batch: list,
             first: int) -> tuple[list, BaseException | None]:
    for i, element in enumerate(batch, first):
        pool.submit(i, seed_offset(trial.stage, trial.epoch, i), element)
    done: dict = {}
    while len(done) < len(batch):
        process_map.receive(pool, done, trial.stats)
    trial.stats.elements -= len(batch)   # counted again by the trial
    values: list = []
    for i in range(first, first + len(batch)):
        value, error = done[i]
        if error is not None:
            return values, error
        trial.stats.add_buffered(-1, -structure.nbytes(value))
        values.append(value)
    return values, None
