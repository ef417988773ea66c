"""One thread policy for everything tapeflow runs: eager kernels, every ``tf.function``, ``fit``
and the ``tf.data`` workers. tapeflow owns the cores it uses; BLAS never adds threads of its own.

Why: NumPy's OpenBLAS starts one thread per core and lets them spin after each product. Next to
a graph's inter-op worker and the calling thread they oversubscribe a 2-core machine, and a
spinning BLAS thread stalls the graph: the W10 LSTM step as a ``tf.function`` took 35 ms in one
process and 390-450 ms in the next on an idle machine, 1.6-3.2 s under load, and 35 ms every
time with ``OPENBLAS_NUM_THREADS=1``.

The rules (docs/threads.md):
- BLAS runs on one thread. ``pin_blas`` sets every BLAS library loaded into the process to one
  thread when tapeflow is imported (threadpoolctl: OpenBLAS, MKL, BLIS alike), and
  ``single_threaded_blas`` pins it again around each graph call and ``fit`` step, in case user
  code raised it in between (the count is restored afterwards). NumPy code of the user's own
  in the same process shares that library and so runs single-threaded too; raise it for a block
  with ``threadpoolctl.threadpool_limits``.
- A kernel splits its rows over at most ``intra_op_threads()`` threads (``kernels.parallel``),
  a graph hands independent nodes to at most ``inter_op_threads() - 1`` worker threads
  (``graph.interop``), and tf.data's AUTOTUNE keeps CPU-bound stages within ``cores()``.
  ``tf.config.threading.set_intra_op_parallelism_threads`` / ``..._inter_op_...`` set the first
  two, as in TensorFlow (0: automatic).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from threadpoolctl import ThreadpoolController

from tapeflow._api import export

F = TypeVar("F", bound=Callable)

MAX_INTRA_OP = 4  # measured: a memory-bound pass gains nothing beyond the memory bandwidth

_intra_op = 0  # 0: automatic
_inter_op = 0


def cores() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _check_count(name: str, num_threads: object) -> int:
    if type(num_threads) is not int or num_threads < 0:
        raise ValueError(f"{name}: num_threads must be an int >= 0 (0: automatic), "
                         f"got {num_threads!r}")
    return num_threads


@export("config.threading.set_intra_op_parallelism_threads")
def set_intra_op_parallelism_threads(num_threads: int) -> None:
    """Threads one kernel may split its work over; 0 chooses automatically (the cores, at most
    four). Kernels run after this call follow it."""
    global _intra_op
    _intra_op = _check_count("set_intra_op_parallelism_threads", num_threads)


@export("config.threading.get_intra_op_parallelism_threads")
def get_intra_op_parallelism_threads() -> int:
    """The value set with ``set_intra_op_parallelism_threads`` (0: automatic)."""
    return _intra_op


@export("config.threading.set_inter_op_parallelism_threads")
def set_inter_op_parallelism_threads(num_threads: int) -> None:
    """Threads a graph may run independent nodes on: 1 runs everything in order on the
    caller's thread, 0 chooses automatically (two when the process has two or more cores).
    Graphs compiled after this call follow it."""
    global _inter_op
    _inter_op = _check_count("set_inter_op_parallelism_threads", num_threads)


@export("config.threading.get_inter_op_parallelism_threads")
def get_inter_op_parallelism_threads() -> int:
    """The value set with ``set_inter_op_parallelism_threads`` (0: automatic)."""
    return _inter_op


def intra_op_threads() -> int:
    """Threads a kernel's row slices may run on now."""
    return _intra_op or max(1, min(MAX_INTRA_OP, cores()))


def inter_op_threads() -> int:
    """Threads a graph compiled now runs its nodes on (the caller's included)."""
    return _inter_op or min(2, cores())


# --- BLAS ---------------------------------------------------------------------------------------

_blas: list = []  # threadpoolctl controllers of the BLAS libraries pinned at import
_lock = threading.Lock()
_inside = 0  # calls running under single_threaded_blas right now, on any thread
_restore: list[int] = []


def pin_blas() -> None:
    """Set every BLAS library loaded now (NumPy's) to one thread, for the whole process."""
    import numpy  # noqa: F401  (loads NumPy's BLAS before the libraries are listed)

    _blas[:] = ThreadpoolController().select(user_api="blas").lib_controllers
    for lib in _blas:
        lib.set_num_threads(1)
    _getters[:] = [_thread_count_getter(lib) for lib in _blas]


# each library's own C getter, looked up once: threadpoolctl looks the symbol up on every call,
# which made the check around each graph call cost about 2 us
_GETTER_SYMBOLS = {"openblas": "openblas_get_num_threads", "mkl": "MKL_Get_Max_Threads",
                   "blis": "bli_thread_get_num_threads"}
_getters: list = []


def _thread_count_getter(lib: Any) -> Any:
    symbol = _GETTER_SYMBOLS.get(getattr(lib, "internal_api", ""))
    try:
        func = lib._get_symbol(symbol) if symbol else None
    except Exception:   # a threadpoolctl without the private lookup: its public call
        func = None
    return func if func is not None else lib.get_num_threads


def blas_threads() -> list[int]:
    """The thread count of each BLAS library pinned at import (for tests and reports)."""
    return [lib.get_num_threads() for lib in _blas]


def _enter() -> None:
    global _inside
    with _lock:
        if _inside == 0:
            _restore[:] = [get() for get in _getters]
            for lib, n in zip(_blas, _restore):
                if n != 1:
                    lib.set_num_threads(1)
        _inside += 1


def _leave() -> None:
    global _inside
    with _lock:
        _inside -= 1
        if _inside == 0:
            for lib, n in zip(_blas, _restore):
                if n != 1:
                    lib.set_num_threads(n)


def single_threaded_blas(fn: F) -> F:
    """Decorate an entry point (a graph call, a ``fit`` step, a kernel) so its BLAS calls use
    one thread even if user code raised the count; the count is restored when the last such
    call (on any thread: graphs run kernels concurrently) returns.

    The usual case, every library still at the one thread ``pin_blas`` set, costs one C getter
    call per library and nothing else (no lock, no setter): the W2 LSTMCell graph step went
    18.1 -> 21 us when every call took the lock and compared counts."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _inside == 0:
            for get in _getters:
                if get() != 1:
                    break
            else:
                return fn(*args, **kwargs)
        _enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _leave()

    return wrapper  # type: ignore[return-value]
