"""Intra-op parallelism: split one kernel's rows (or images) over the idle cores.

BLAS runs single-threaded (the thread policy, ``framework.threads``) and the numba loops are
compiled serial (``_jit``); instead a kernel hands ``split`` a function of a row range, and the
idle cores (at most ``intra_op_threads()``) run its contiguous slices, each on its own thread.
NumPy's products and the numba loops release the GIL, so the slices run in parallel. This pays
for the compute-bound convolutions and for the memory-bound passes alike: one core of the
project machine reads ~8 GB/s, two together ~13 GB/s (an elementwise pass over 13.6 MB:
1.97 ms on one thread, 1.24 ms on two).

Each thread claims the next slice as it comes free, so a slower slice does not hold the other
core idle; a split that found no idle core runs its slices one after another, and a thread that
comes free meanwhile joins in (``join_open``: the inter-op worker when it runs out of nodes,
the caller while it waits for the worker's node). A kernel whose work units are fixed by size
(the Winograd convolution's chunks of images) passes one slice per unit.

The slices depend on the size of the work alone, never on the load: on a busy machine the same
slices run one after another on the calling thread. Results are then the same bits whether
cores were idle or not. Both a reduction's partial sums (float addition is not associative)
and a product's rows (OpenBLAS picks its kernel by the matrix size, measured: a row of a
1000-row product differs from the same row of a 4-row one by 2e-6) would otherwise change with
the split; had the load decided it, one training step gave different gradients from call to
call.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

from tapeflow.framework.threads import intra_op_threads

PARALLEL_MIN_BYTES = 1 << 21  # below this the hand-over (~20 us) costs more than it saves


class _Helper:
    """One kernel thread, handed one split at a time through two locks (start, done); it takes
    that split's slices as it comes free (``_Task``).

    A ThreadPoolExecutor's round trip (a Future, its Condition, a queue) cost 44-49 us wall and
    23-26 us CPU per hand-over on the shared 2-core machine; two bare locks 24-30 us and
    13-15 us. A split product of W9 hands over ~50 a step. A helper serves one split at a time
    for whichever thread claims it: a caller that finds it busy (the inter-op worker's kernel
    next to the main thread's) runs the slices itself, as the slices' results do not depend on
    where they run."""

    def __init__(self) -> None:
        self._claim = threading.Lock()
        self._start = threading.Lock()
        self._done = threading.Lock()
        self._start.acquire()
        self._done.acquire()
        self._job: tuple | None = None
        self._result: Any = None
        self._error: BaseException | None = None
        threading.Thread(target=self._loop, name="tapeflow-kernel", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self._start.acquire()
            fn, arg = self._job
            try:
                self._result = fn(arg)
            except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
                self._error = e
            self._done.release()

    def start(self, fn: Callable[[Any], Any], arg: Any) -> bool:
        """Hand fn(arg) over; False (nothing started) if another caller holds it."""
        if not self._claim.acquire(blocking=False):
            return False
        self._job = (fn, arg)
        self._start.release()
        return True

    def finish(self) -> Any:
        """Wait for the slice started last; its result (or its exception, raised here)."""
        self._done.acquire()
        result, error = self._result, self._error
        self._job = self._result = self._error = None
        self._claim.release()
        if error is not None:
            raise error
        return result


_helpers: list[_Helper] = []
_helpers_lock = threading.Lock()


_loadavg_fd: int | None = None


def _runnable() -> int:
    """Runnable threads on the machine now (/proc/loadavg's fourth field). The file stays open
    and is re-read in place: opening it each time cost ~14 us, a read ~2.5 us."""
    global _loadavg_fd
    if _loadavg_fd is None:
        _loadavg_fd = os.open("/proc/loadavg", os.O_RDONLY)
    return int(os.pread(_loadavg_fd, 128, 0).split()[3].split(b"/")[0])


def idle_core() -> bool:
    """Whether another core is free right now (runnable threads besides this one, from
    /proc/loadavg): on a busy machine the second slice waits for a core and the split only adds
    a straggler (measured 20% slower at load 6 on 2 cores). Our own worker is idle here, and
    the inter-op worker counts as busy while it runs a kernel (``graph.interop``)."""
    try:
        runnable = _runnable()
    except (OSError, IndexError, ValueError):
        return True
    return runnable - 1 < intra_op_threads() - 1


def slices_for(n: int, nbytes: int) -> int:
    """How many slices `n` rows touching `nbytes` bytes are cut into (the size alone decides)."""
    workers = intra_op_threads()
    if workers == 1 or n < 2 or nbytes < PARALLEL_MIN_BYTES:
        return 1
    return min(workers, n)


def parts_for(n: int, nbytes: int) -> int:
    """How many threads run those slices now: one per core (at most one per slice) when cores
    are idle, else one."""
    slices = slices_for(n, nbytes)
    return min(slices, intra_op_threads()) if slices > 1 and idle_core() else 1


def _forget_pool() -> None:
    """A forked child has no helper threads: it must start its own; nor the threads whose
    splits were open (their tasks' locks may have been held at the fork)."""
    global _helpers_lock
    _helpers.clear()
    _helpers_lock = threading.Lock()
    _open.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _get_helpers(n: int) -> list[_Helper]:
    if len(_helpers) < n:  # grown to the thread policy's intra-op count when first used
        with _helpers_lock:
            while len(_helpers) < n:
                _helpers.append(_Helper())
    return _helpers[:n]


class _Task:
    """One split's slices, each claimed by whichever thread comes free next (the caller, the
    helpers it started, an idle inter-op worker that joins with ``join_open``); the results land in
    slice order whoever ran them."""

    __slots__ = ("work", "cuts", "results", "errors", "_claims", "_lock", "_closed", "_joined")

    def __init__(self, work: Callable[[int, int], Any], cuts: list[int]):
        self.work, self.cuts = work, cuts
        self.results: list = [None] * (len(cuts) - 1)
        self.errors: list[tuple[int, BaseException]] = []
        self._claims = itertools.count()  # next() is atomic under the GIL
        self._lock = threading.Lock()
        self._closed = False
        self._joined: list[threading.Lock] = []

    def run(self, stop: Callable[[], bool] | None = None) -> None:
        """Claim and run slices until none is left (or, between slices, until stop())."""
        count = len(self.results)
        while (i := next(self._claims)) < count:
            try:
                self.results[i] = self.work(self.cuts[i], self.cuts[i + 1])
            except BaseException as e:  # noqa: BLE001 - raised by the caller once all are done
                self.errors.append((i, e))
            if stop is not None and stop():
                return

    def join(self, stop: Callable[[], bool]) -> None:
        """Run slices from another thread, unless the caller has closed the task."""
        with self._lock:
            if self._closed:
                return
            done = threading.Lock()
            done.acquire()
            self._joined.append(done)
        try:
            self.run(stop)
        finally:
            done.release()

    def close(self) -> None:
        """Let no thread join any more; wait for those that did."""
        with self._lock:
            self._closed = True
        for done in self._joined:
            done.acquire()


_open: dict[int, _Task] = {}  # thread id -> the split it runs alone now, open to join_open


def join_open(stop: Callable[[], bool]) -> None:
    """Run slices of a split another thread is running alone (it found no idle core when it
    began) until none is left, or until stop() says this thread has work of its own (checked
    between slices). The inter-op worker calls this when it runs out of nodes, and the calling
    thread while it waits for the worker's node: a kernel started beside the other thread's
    then finishes on both cores. The slices, and so the results, are the same whoever runs
    them."""
    me = threading.get_ident()
    for thread, task in list(_open.items()):
        if thread != me:
            task.join(stop)
            return


def split(n: int, nbytes: int, work: Callable[[int, int], Any],
          slices: int | None = None) -> list:
    """work(lo, hi) on contiguous slices of range(n), shared out among the idle cores (each
    thread claims the next slice as it comes free), else run one after another on this thread
    (where an idle inter-op worker may join in, ``join_open``); the results in order.

    Work touching fewer than PARALLEL_MIN_BYTES bytes in all runs as one call on this thread.
    `slices` overrides that size test (a compute-bound kernel counts its FLOPs instead); it too
    must depend on the work's size alone."""
    if slices is None:
        slices = slices_for(n, nbytes)
        parts = parts_for(n, nbytes) if slices > 1 else 1
    else:
        slices = max(1, min(slices, n))
        parts = min(slices, intra_op_threads()) if slices > 1 and idle_core() else 1
    if slices == 1:
        return [work(0, n)]
    task = _Task(work, [n * i // slices for i in range(slices + 1)])
    helpers = _get_helpers(parts - 1)
    started = [h for h in helpers if h.start(_run_task, task)]
    me = threading.get_ident()
    opened = not started and me not in _open  # an outer split of this thread stays open
    if opened:
        _open[me] = task
    try:
        task.run()
    finally:
        if opened:
            del _open[me]
        task.close()
        for h in started:
            h.finish()
    if task.errors:
        raise min(task.errors, key=lambda e: e[0])[1]
    return task.results


def _run_task(task: _Task) -> None:
    task.run()
