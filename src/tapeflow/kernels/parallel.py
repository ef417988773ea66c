"""Intra-op parallelism: split one kernel's rows (or images) over the idle cores.

BLAS runs single-threaded (the thread policy, ``framework.threads``) and the numba loops are
compiled serial (``_jit``); instead a kernel hands ``split`` a function of a row range, and each
idle core (at most ``intra_op_threads()``) runs one contiguous slice on its own thread. NumPy's
products and the numba loops release the GIL, so the slices run in parallel. This pays for the
compute-bound convolutions and for the memory-bound passes alike: one core of the project
machine reads ~8 GB/s, two together ~13 GB/s (an elementwise pass over 13.6 MB: 1.97 ms on one
thread, 1.24 ms on two).

The slices depend on the size of the work alone, never on the load: on a busy machine the same
slices run one after another on the calling thread. Results are then the same bits whether
cores were idle or not. Both a reduction's partial sums (float addition is not associative)
and a product's rows (OpenBLAS picks its kernel by the matrix size, measured: a row of a
1000-row product differs from the same row of a 4-row one by 2e-6) would otherwise change with
the split; had the load decided it, one training step gave different gradients from call to
call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from tapeflow.framework.threads import intra_op_threads

PARALLEL_MIN_BYTES = 1 << 21  # below this the hand-over (~20 us) costs more than it saves


class _Helper:
    """One kernel thread, handed one slice at a time through two locks (start, done).

    A ThreadPoolExecutor's round trip (a Future, its Condition, a queue) cost 44-49 us wall and
    23-26 us CPU per slice on the shared 2-core machine; two bare locks 24-30 us and 13-15 us.
    A split product of W9 hands over ~50 slices a step. A helper runs one slice at a time for
    whichever thread claims it: a caller that finds it busy (the inter-op worker's kernel next
    to the main thread's) runs that slice itself, as the slices' results do not depend on
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
            work, lo, hi = self._job
            try:
                self._result = work(lo, hi)
            except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
                self._error = e
            self._done.release()

    def start(self, work: Callable[[int, int], Any], lo: int, hi: int) -> bool:
        """Hand work(lo, hi) over; False (nothing started) if another caller holds it."""
        if not self._claim.acquire(blocking=False):
            return False
        self._job = (work, lo, hi)
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
    """How many threads run those slices now: all of them one per core, or one if none is
    idle."""
    slices = slices_for(n, nbytes)
    return slices if slices > 1 and idle_core() else 1


def _forget_pool() -> None:
    """A forked child has no helper threads: it must start its own."""
    global _helpers_lock
    _helpers.clear()
    _helpers_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _get_helpers(n: int) -> list[_Helper]:
    if len(_helpers) < n:  # grown to the thread policy's intra-op count when first used
        with _helpers_lock:
            while len(_helpers) < n:
                _helpers.append(_Helper())
    return _helpers[:n]


def split(n: int, nbytes: int, work: Callable[[int, int], Any],
          slices: int | None = None) -> list:
    """work(lo, hi) on contiguous slices of range(n), one per core when cores are idle, else
    one after another on this thread; the results in order.

    Work touching fewer than PARALLEL_MIN_BYTES bytes in all runs as one call on this thread.
    `slices` overrides that size test (a compute-bound kernel counts its FLOPs instead); it too
    must depend on the work's size alone."""
    if slices is None:
        slices = slices_for(n, nbytes)
        now = slices > 1 and parts_for(n, nbytes) > 1
    else:
        slices = max(1, min(slices, n))
        now = slices > 1 and idle_core()
    cuts = [n * i // slices for i in range(slices + 1)]
    if not now:
        return [work(cuts[i], cuts[i + 1]) for i in range(slices)]
    helpers = _get_helpers(slices - 1)
    started = [h.start(work, cuts[i], cuts[i + 1]) for i, h in enumerate(helpers, 1)]
    results: list = [None] * slices
    try:
        results[0] = work(cuts[0], cuts[1])
        for i, ok in enumerate(started, 1):
            if not ok:  # its helper was busy with another caller's slice
                results[i] = work(cuts[i], cuts[i + 1])
    finally:
        errors = []
        for i, (h, ok) in enumerate(zip(helpers, started), 1):
            if ok:
                try:
                    results[i] = h.finish()
                except BaseException as e:  # noqa: BLE001 - raised once every slice is done
                    errors.append(e)
    if errors:
        raise errors[0]
    return results
