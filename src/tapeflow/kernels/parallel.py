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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tapeflow.framework.threads import intra_op_threads

PARALLEL_MIN_BYTES = 1 << 21  # below this the hand-over (~20 us) costs more than it saves
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


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
    """A forked child has no worker threads: it must start its own."""
    global _pool, _pool_size
    _pool, _pool_size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def split(n: int, nbytes: int, work: Callable[[int, int], Any],
          slices: int | None = None) -> list:
    """work(lo, hi) on contiguous slices of range(n), one per core when cores are idle, else
    one after another on this thread; the results in order.

    Work touching fewer than PARALLEL_MIN_BYTES bytes in all runs as one call on this thread.
    `slices` overrides that size test (a compute-bound kernel counts its FLOPs instead); it too
    must depend on the work's size alone."""
    global _pool, _pool_size
    if slices is None:
        slices = slices_for(n, nbytes)
        now = slices > 1 and parts_for(n, nbytes) > 1
    else:
        slices = max(1, min(slices, n))
        now = slices > 1 and idle_core()
    cuts = [n * i // slices for i in range(slices + 1)]
    if not now:
        return [work(cuts[i], cuts[i + 1]) for i in range(slices)]
    if _pool_size < slices - 1:  # grown to the thread policy's intra-op count when first used
        if _pool is not None:
            _pool.shutdown(wait=False)
        _pool = ThreadPoolExecutor(slices - 1, thread_name_prefix="tapeflow-kernel")
        _pool_size = slices - 1
    futures = [_pool.submit(work, cuts[i], cuts[i + 1]) for i in range(1, slices)]
    return [work(cuts[0], cuts[1])] + [f.result() for f in futures]
