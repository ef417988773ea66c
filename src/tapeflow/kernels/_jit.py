"""numba when installed, otherwise a marker so callers pick their NumPy path."""

from __future__ import annotations

from collections.abc import Callable

try:
    import numba as _numba
except ImportError:  # numba is an optional extra; kernels fall back to NumPy
    _numba = None

HAVE_NUMBA = _numba is not None


def jit(parallel: bool = False) -> Callable[[Callable], Callable | None]:
    """Compile with numba (cached on disk); without numba return None so callers fall back."""

    def wrap(fn: Callable) -> Callable | None:
        if _numba is None:
            return None
        return _numba.njit(cache=True, parallel=False, nogil=True)(fn)

    return wrap


prange = _numba.prange if _numba is not None else range
