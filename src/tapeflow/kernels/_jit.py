"""numba when installed, otherwise None so callers pick their NumPy path.

Kernels are compiled serial on purpose: they run between BLAS calls, and a numba thread pool
next to OpenBLAS's threads made each hand-over cost milliseconds on a 2-core machine.
"""

from __future__ import annotations

from collections.abc import Callable

try:
    import numba as _numba
except ImportError:  # numba is an optional extra; kernels fall back to NumPy
    _numba = None


def jit(fastmath: bool | set = False, **options: object) -> Callable[[Callable], Callable | None]:
    """Compile with numba (cached on disk); without numba return None. `fastmath`: numba's
    flags (a set such as {"reassoc"} lets a reduction run in SIMD lanes); other `options` go
    to ``numba.njit`` (``error_model="numpy"``: a float division by zero gives inf/nan without a
    per-element check, which lets the loop vectorize).
    """

    def wrap(fn: Callable) -> Callable | None:
        if _numba is None:
            return None
        return _numba.njit(cache=True, nogil=True, fastmath=fastmath, **options)(fn)

    return wrap
