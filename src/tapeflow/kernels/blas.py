"""Run NumPy's OpenBLAS single-threaded inside the convolution kernels.

The kernels' products are skinny (tens of columns, 10^4-10^5 rows). OpenBLAS splits such a
product across threads that must all wake and meet at a barrier; on a 2-core machine with other
processes running, a sleeping helper thread turns a 13 ms product into 50-500 ms. One thread
per product is as fast when the machine is quiet and stays fast when it is not.

The thread count is set through OpenBLAS's own C entry point (found in the library NumPy has
already loaded); without OpenBLAS this module does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

_SYMBOLS = ("scipy_openblas_{}64_", "scipy_openblas_{}", "openblas_{}64_", "openblas_{}")


def _loaded_openblas() -> tuple[Callable | None, Callable | None]:
    """(set_num_threads, get_num_threads) of the OpenBLAS mapped into this process, if any."""
    import numpy  # noqa: F401  (loads NumPy's BLAS before the maps are read)

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
    except OSError:
        return None, None
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern in _SYMBOLS:
            setter = getattr(lib, pattern.format("set_num_threads"), None)
            getter = getattr(lib, pattern.format("get_num_threads"), None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None, None


_set_threads, _get_threads = _loaded_openblas()


_lock = threading.Lock()
_inside = 0  # kernels running single-threaded right now, on any thread
_restore = 1


def _enter() -> None:
    global _inside, _restore
    with _lock:
        if _inside == 0:
            _restore = _get_threads()
            if _restore != 1:
                _set_threads(1)
        _inside += 1


def _leave() -> None:
    global _inside
    with _lock:
        _inside -= 1
        if _inside == 0 and _restore != 1:
            _set_threads(_restore)


def single_threaded(fn: F) -> F:
    """Decorate a kernel so its BLAS calls use one thread; the previous count is restored when
    the last such kernel (on any thread: graphs run kernels concurrently) returns."""
    if _set_threads is None:
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _leave()

    return wrapper  # type: ignore[return-value]
