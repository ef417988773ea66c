"""AUTOTUNE that explains itself.

Every asynchronous stage (prefetch, parallel map, parallel interleave) keeps a `StageStats`:
the knob values in force, what is buffered, and who waited on whom. The `Tuner` of one iterator
adjusts the knobs marked AUTOTUNE within a CPU budget (cores) and a RAM budget (bytes), and
`report()` says what it chose, why, and which stage is the bottleneck.

Rules, kept simple enough to state in one line each:
- a parallel map's parallelism follows its measured throughput (`ParallelismSearch`): while its
  consumer waits on it, it tries one worker more (or, when that is not allowed or recently
  failed, one fewer) for a measuring window and keeps the step only if elements/s rose by
  `GAIN` (up) or did not fall by as much (down), else goes back (and waits longer before trying
  that step again); while its consumer does not wait and its workers are mostly idle, it gives
  one back. The search carries over to the next pass over the same map function. Steps up
  stay within the CPU budget: parallelism x (CPU share of a call) <= budget (so sleeping or
  I/O-bound work may use more threads than cores, CPU-bound work may not);
- a prefetch buffer grows by one each time its consumer finds it empty, while the bytes
  buffered by the whole pipeline stay within the RAM budget.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from tapeflow.framework import threads

AUTOTUNE = -1
MAX_PARALLELISM = 64
MAX_BUFFER = 256


def default_cpu_budget() -> int:
    """Cores this process may run on (the thread policy, ``framework.threads``)."""
    return threads.cores()


def default_ram_budget() -> int:
    """Half of the memory currently available (bytes)."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        available = 4 << 30
    return max(available // 2, 64 << 20)


def queued_s() -> float:
    """Seconds the calling thread has spent runnable but waiting for a CPU (Linux's
    schedstat; 0.0 where it is not available)."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return 0.0
    try:
        return int(os.read(fd, 128).split()[1]) * 1e-9
    except (OSError, ValueError, IndexError):
        return 0.0
    finally:
        os.close(fd)


@dataclass
class StageStats:
    """Measurements and knob values of one asynchronous stage of a running iterator."""

    name: str
    parallelism: int = 1
    parallelism_autotuned: bool = False
    buffer_size: int = 1
    buffer_autotuned: bool = False
    elements: int = 0
    buffered_elements: int = 0
    buffered_bytes: int = 0
    peak_buffered_bytes: int = 0
    bytes_made: int = 0         # of all elements the stage produced (for per-element averages)
    consumer_wait_s: float = 0.0
    busy_s: float = 0.0
    cpu_s: float = 0.0
    queued_s: float = 0.0       # of busy_s, waiting for a CPU (Linux schedstat)
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None
    notes: list = field(default_factory=list)
    on_change: object = None

    def finish(self) -> None:
        """Freeze the clock when the stage's iterator ends (reports stay meaningful after)."""
        if self.ended is None:
            self.ended = time.perf_counter()

    def add_buffered(self, n_elements: int, n_bytes: int) -> None:
        self.buffered_elements += n_elements
        self.buffered_bytes += n_bytes
        if self.buffered_bytes > self.peak_buffered_bytes:
            self.peak_buffered_bytes = self.buffered_bytes
        if self.on_change is not None and n_bytes > 0:
            self.on_change()

    def held_by_budget(self, held: int) -> None:
        """Note that the RAM budget kept this stage's buffer at `held` elements."""
        note = f"RAM budget held the buffer at {held}"
        if not any(n.startswith("RAM budget held") for n in self.notes):
            self.notes.append(note)

    def record_call(self, wall_s: float, cpu_s: float, queued_s: float = 0.0) -> None:
        self.busy_s += wall_s
        self.cpu_s += cpu_s
        self.queued_s += queued_s

    @property
    def cpu_share(self) -> float:
        """Fraction of a worker's busy time spent on a CPU (1.0 for pure compute), not
        counting time it waited for a CPU (on a busy machine compute still counts as such)."""
        running = max(self.busy_s - self.queued_s, self.cpu_s)
        return self.cpu_s / running if running > 0 else 1.0

    @property
    def lifetime_s(self) -> float:
        end = self.ended if self.ended is not None else time.perf_counter()
        return max(end - self.started, 1e-9)


class Tuner:
    """Holds the budgets and stage stats of one iterator and applies the tuning rules."""

    def __init__(self, cpu_budget: int | None = None, ram_budget: int | None = None,
                 thread_cap: int | None = None):
        self.cpu_budget = cpu_budget or default_cpu_budget()
        self.ram_budget = ram_budget or default_ram_budget()
        self.thread_cap = thread_cap or MAX_PARALLELISM
        self.stages: list[StageStats] = []
        self.consumer_wait_s = 0.0
        self.elements = 0
        self.started = time.perf_counter()
        self.ended: float | None = None
        self.peak_bytes = 0
        self._lock = threading.Lock()

    def stage(self, name: str, **knobs) -> StageStats:
        stats = StageStats(name, **knobs)
        stats.on_change = self._note_peak
        with self._lock:
            self.stages.append(stats)
        return stats

    def initial_parallelism(self) -> int:
        return max(1, min(self.cpu_budget, self.thread_cap))

    def parallelism_cap(self, stats: StageStats) -> int:
        """Most workers the CPU budget allows given the measured CPU share of a call."""
        share = max(stats.cpu_share, 1.0 / MAX_PARALLELISM)
        return max(1, min(int(self.cpu_budget / share), self.thread_cap, MAX_PARALLELISM))

    def parallelism_search(self, stats: StageStats, fn: Any = None,
                           shape: tuple = ()) -> ParallelismSearch | None:
        """The throughput search of an AUTOTUNE stage (None for a fixed parallelism), attached
        to `stats`: the one kept for map function `fn` in a pipeline of this `shape` when `fn`
        is given (it sets `stats.parallelism` to where the last pass ended)."""
        if not stats.parallelism_autotuned:
            return None
        search = ParallelismSearch(self) if fn is None else _checkout(fn, shape, self)
        search.attach(stats, self)
        return search

    def maybe_grow_buffer(self, stats: StageStats) -> bool:
        """Called when a consumer found a buffer empty; True when the buffer grew."""
        if not stats.buffer_autotuned or stats.buffer_size >= MAX_BUFFER:
            return False
        per_element = stats.peak_buffered_bytes / max(stats.buffer_size, 1)
        if self.buffered_bytes() + per_element > self.ram_budget:
            if "RAM budget reached" not in stats.notes:
                stats.notes.append("RAM budget reached")
            return False
        stats.buffer_size += 1
        return True

    def buffered_bytes(self) -> int:
        return sum(s.buffered_bytes for s in self.stages)

    def _note_peak(self) -> None:
        total = self.buffered_bytes()
        if total > self.peak_bytes:
            self.peak_bytes = total

    def admits(self, n_bytes: int) -> bool:
        """Whether buffering `n_bytes` more keeps the whole pipeline within the RAM budget.
        (A stage whose buffer is empty may always hold one element, so the pipeline moves.)"""
        return self.buffered_bytes() + n_bytes <= self.ram_budget

    def report(self) -> AutotuneReport:
        return AutotuneReport.build(self)


GAIN = 1.10            # a step is kept when it raised elements/s by 10% (up) or when the step
                       # up it undoes would not have been kept (down)
WINDOW_S = 0.05         # shortest measuring window ...
WINDOW_ELEMENTS = 8     # ... and fewest elements in it
WAITED = 0.05           # the consumer "waits" when it spent this share of a window waiting
IDLE = 0.6              # give a worker back when the rest would be busy less than this
FIRST_BACKOFF_S = 0.5   # a failed step is not tried again for this much iterating, doubling


class ParallelismSearch:
    """Hill climbing on a parallel map's measured throughput, one worker at a time, both ways.

    The consumer calls `observe()` each time it takes results; every window of at least
    `WINDOW_S` and `WINDOW_ELEMENTS` it compares the elements/s of the window with the last
    one. While the consumer waits on the map, a step is a trial: up (one more worker, while
    the CPU budget allows) is kept if the rate rose by `GAIN`; down (one fewer: threads that
    contend for the GIL can be slower than one) is kept unless the rate fell by as much, so
    both directions agree on when p workers are worth more than p - 1. A trial that fails is
    undone and not tried again for twice as long as the last time (load changes can make it
    pay later).

    Short passes: the search outlives its iterator. `Tuner.parallelism_search` keeps one per
    map function and pipeline shape, so a pipeline rebuilt or re-iterated every epoch starts
    where the last pass ended, with its unfinished window, trial and backoffs; windows and
    backoffs count only time spent iterating, so a pass shorter than a window still adds to
    the measurement."""

    def __init__(self, tuner: Tuner):
        self.tuner = tuner
        self.stats: StageStats | None = None
        self.in_use = False                   # checked out by an iterator (see _checkout)
        self.parallelism: int | None = None   # where the next iterator starts (None: budget)
        self.carry = (0.0, 0, 0.0, 0.0)      # partial window from earlier iterators
        self.iterated_s = 0.0                 # iterating time of detached iterators
        self.attached_at = 0.0
        self.base_rate = 0.0
        self.trial_from: int | None = None    # parallelism before the step on trial
        self.retry_at: dict = {}   # (direction, parallelism) -> clock before which not tried
        self.backoff: dict = {}    # (direction, parallelism) -> the last wait before retrying

    def attach(self, stats: StageStats, tuner: Tuner) -> None:
        """Tune `stats` (a new iterator's stage), starting from what earlier passes measured."""
        self.stats, self.tuner = stats, tuner
        self.attached_at = time.perf_counter()
        if self.parallelism is not None:
            p = max(1, min(self.parallelism, tuner.thread_cap, MAX_PARALLELISM))
            if p != stats.parallelism:
                stats.notes.append(f"started at parallelism {p} (measured in earlier passes)")
            stats.parallelism = stats.buffer_size = p
        self._window()

    def detach(self) -> None:
        """The iterator ended: keep the partial window and the parallelism for the next one."""
        s = self.stats
        if s is None:
            return
        now = time.perf_counter()
        e, n, w, b = self._sums(now)
        self.carry = (e, n, w, b)
        self.iterated_s += now - self.attached_at
        self.parallelism = s.parallelism
        self.stats, self.in_use = None, False

    def clock(self) -> float:
        """Seconds spent iterating with this search (all its iterators)."""
        return self.iterated_s + time.perf_counter() - self.attached_at

    def _window(self) -> None:
        s = self.stats
        self.t0, self.n0 = time.perf_counter(), s.elements
        self.wait0, self.busy0 = s.consumer_wait_s, s.busy_s

    def _sums(self, now: float) -> tuple:
        """(seconds, elements, consumer wait, worker busy) of the window so far."""
        s, (e, n, w, b) = self.stats, self.carry
        return (e + now - self.t0, n + s.elements - self.n0, w + s.consumer_wait_s - self.wait0,
                b + s.busy_s - self.busy0)

    def observe(self) -> int | None:
        """A new parallelism when the measurements call for one, else None."""
        s, now = self.stats, time.perf_counter()
        elapsed, n, wait_s, busy_s = self._sums(now)
        if elapsed < WINDOW_S or n < WINDOW_ELEMENTS:
            return None
        rate, waited = n / elapsed, wait_s / elapsed
        busy = busy_s / (elapsed * s.parallelism)
        self.carry = (0.0, 0, 0.0, 0.0)
        self._window()
        p = s.parallelism
        if self.trial_from is not None:
            return self._judge(p, rate)
        clock = self.clock()
        if waited >= WAITED:
            if (p < self.tuner.parallelism_cap(s)
                    and clock >= self.retry_at.get(("up", p + 1), 0.0)):
                return self._try(p, p + 1, rate)
            if p > 1 and clock >= self.retry_at.get(("down", p - 1), 0.0):
                return self._try(p, p - 1, rate)
        if waited < WAITED / 5 and p > 1 and busy * p / (p - 1) < IDLE:
            self._note(f"parallelism {p} -> {p - 1}: workers {busy:.0%} busy, consumer never "
                       f"waited")
            return self._set(p - 1)
        return None

    def _try(self, p: int, to: int, rate: float) -> int:
        self.base_rate, self.trial_from = rate, p
        return self._set(to)

    def _judge(self, p: int, rate: float) -> int | None:
        """Keep or undo the step from `trial_from` to `p` by the rate of its window."""
        was, self.trial_from = self.trial_from, None
        up = p > was
        kept = rate >= self.base_rate * GAIN if up else rate * GAIN > self.base_rate
        step = f"parallelism {was} -> {p}: {self.base_rate:.0f} -> {rate:.0f}/s"
        if kept:
            self._note(f"{step}, kept")
            return None
        key = ("up" if up else "down", p)
        wait = 2 * self.backoff.get(key, FIRST_BACKOFF_S / 2)
        self.backoff[key], self.retry_at[key] = wait, self.clock() + wait
        self._note(f"{step}, undone")
        return self._set(was)

    def _set(self, p: int) -> int:
        self.stats.parallelism = p
        return p

    def _note(self, text: str) -> None:
        notes = self.stats.notes
        notes[:] = [n for n in notes if not n.startswith("parallelism ")] + [text]


# Searches kept across iterators: {map function: {pipeline shape and budgets: search}}. Weak
# on the function, so a pipeline's lambdas do not outlive it.
_searches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_searches_lock = threading.Lock()


def _checkout(fn: Any, shape: tuple, tuner: Tuner) -> ParallelismSearch:
    """The kept search of `fn` in this pipeline shape, or a new one (kept when possible); one
    iterator at a time uses a kept search, others start from its parallelism on their own."""
    key = shape + (tuner.cpu_budget, tuner.thread_cap)
    with _searches_lock:
        try:
            kept = _searches.setdefault(fn, {})
        except TypeError:   # a callable that cannot be weakly referenced: nothing is kept
            return ParallelismSearch(tuner)
        search = kept.get(key)
        if search is None:
            search = kept[key] = ParallelismSearch(tuner)
        elif search.in_use:   # by another iterator
            other = ParallelismSearch(tuner)
            other.parallelism = search.stats.parallelism if search.stats else search.parallelism
            return other
        search.in_use = True
        return search


@dataclass
class AutotuneReport:
    """What the autotuner chose and where the time goes; `print(report)` for a table."""

    cpu_budget: int
    ram_budget: int
    elapsed_s: float
    elements: int
    consumer_wait_s: float
    stages: list
    bottleneck: str
    buffered_bytes: int = 0
    peak_bytes: int = 0

    @classmethod
    def build(cls, tuner: Tuner) -> AutotuneReport:
        elapsed = (tuner.ended or time.perf_counter()) - tuner.started
        return cls(tuner.cpu_budget, tuner.ram_budget, elapsed, tuner.elements,
                   tuner.consumer_wait_s, list(tuner.stages), _bottleneck(tuner, elapsed),
                   tuner.buffered_bytes(), tuner.peak_bytes)

    def __str__(self) -> str:
        lines = [
            f"tf.data autotune report: {self.elements} elements in {self.elapsed_s:.3f} s, "
            f"consumer waited {self.consumer_wait_s:.3f} s "
            f"(CPU budget {self.cpu_budget} cores, RAM budget {self.ram_budget / 2**20:.0f} MiB)",
            f"  memory: {_size(self.buffered_bytes)} buffered now, peak {_size(self.peak_bytes)}"
            f" of the {_size(self.ram_budget)} budget",
            f"  {'stage':<36}{'parallelism':>13}{'buffer':>9}{'buffered':>12}{'peak':>12}"
            f"{'waited on':>11}{'busy':>8}{'cpu':>6}",
        ]
        for s in self.stages:
            par = f"{s.parallelism}{'*' if s.parallelism_autotuned else ''}"
            buf = f"{s.buffer_size}{'*' if s.buffer_autotuned else ''}"
            busy = s.busy_s / (s.lifetime_s * max(s.parallelism, 1))
            lines.append(
                f"  {s.name[:35]:<36}{par:>13}{buf:>9}{_size(s.buffered_bytes):>12}"
                f"{_size(s.peak_buffered_bytes):>12}{s.consumer_wait_s:>10.3f}s"
                f"{busy:>8.0%}{s.cpu_share:>6.0%}"
                + (f"  ({'; '.join(s.notes)})" if s.notes else ""))
        lines.append("  (* = chosen by AUTOTUNE; 'waited on' = time the next stage down spent "
                     "waiting for this one; busy = worker utilisation; cpu = CPU share of work)")
        lines.append(f"  bottleneck: {self.bottleneck}")
        return "\n".join(lines)

    __repr__ = __str__


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _bottleneck(tuner: Tuner, elapsed: float) -> str:
    """The most upstream stage whose consumer waits for it a significant share of the time."""
    if elapsed <= 0 or tuner.elements == 0:
        return "nothing measured yet"
    if tuner.consumer_wait_s < 0.1 * elapsed:
        return ("the consumer (your training step): the input pipeline keeps up, it was waited "
                f"on for {tuner.consumer_wait_s / elapsed:.0%} of the time")
    waiting = [s for s in tuner.stages if s.consumer_wait_s >= 0.1 * s.lifetime_s]
    if not waiting:
        return ("the synchronous stages between the iterator and the first asynchronous stage "
                "(consider .prefetch(AUTOTUNE) or num_parallel_calls)")
    stage = waiting[-1]
    busy = stage.busy_s / (stage.lifetime_s * max(stage.parallelism, 1))
    hint = ""
    if stage.parallelism_autotuned and stage.parallelism >= tuner.parallelism_cap(stage):
        hint = " at the CPU budget"
    return (f"{stage.name}: waited on for {stage.consumer_wait_s:.3f} s; workers {busy:.0%} busy "
            f"at parallelism {stage.parallelism}{hint}")
