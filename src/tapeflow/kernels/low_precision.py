"""float16 / bfloat16 inputs of heavy kernels computed in float32 and rounded back.

NumPy has no BLAS path for 16-bit floats (a float16 matmul runs ~400x slower than float32, and
a bfloat16 one returns float32), and the numba conv/pool loops are compiled for float32/64.
TensorFlow's CPU kernels also accumulate 16-bit inputs in float32. ``widened`` wraps such a
kernel: 16-bit inputs are cast up, the float32 result is rounded to the input dtype, and
float32/float64 inputs pay one dtype check. ``astype`` (also the Cast op's float16 path) converts
float32 <-> float16 with compiled loops instead of NumPy's per-element conversion.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from tapeflow.kernels._jit import jit

FLOAT16 = np.dtype(np.float16)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def is_low(dtype: np.dtype) -> bool:
    """Whether `dtype` is a 16-bit float (float16 or bfloat16)."""
    return dtype.itemsize == 2 and (dtype == FLOAT16 or dtype == BFLOAT16)


def widened(kernel: Callable) -> Callable:
    """`kernel` computing in float32 when its first input is a 16-bit float (the op's other
    inputs of that dtype are widened too; its outputs are rounded back)."""

    @functools.wraps(kernel)
    def run(*arrays: Any, **attrs: Any) -> Any:
        low = arrays[0].dtype
        if not is_low(low):
            return kernel(*arrays, **attrs)
        wide = [astype(a, np.float32) if getattr(a, "dtype", None) == low else a for a in arrays]
        out = kernel(*wide, **attrs)
        if isinstance(out, tuple):
            return tuple(_narrow(o, low) for o in out)
        return _narrow(out, low)

    return run


def _narrow(out: Any, low: np.dtype) -> Any:
    out = np.asarray(out)
    return astype(out, low) if out.dtype == np.float32 else out


# --- float16 <-> float32 as compiled bit conversions -------------------------------------------
# NumPy converts float16 one element at a time through a function call (~7 ns each); these
# loops do it in integer arithmetic, round-to-nearest-even, bit for bit what NumPy gives
# (every float16 pattern and a sweep of float32 patterns are checked in the tests), ~5x faster.
@jit()
def _to_half_nb(src_f, src_u, out_u):  # pragma: no cover - compiled
    for i in range(src_u.size):
        u = src_u[i]
        sign = (u >> 16) & 0x8000
        a = u & 0x7FFFFFFF
        if a >= 0x47800000:  # |x| >= 65536 (or inf/nan): inf, nan stays a quiet nan
            h = 0x7E00 if a > 0x7F800000 else 0x7C00
        elif a < 0x38800000:  # below float16's smallest normal: a multiple of 2**-24
            h = np.uint32(np.rint(abs(src_f[i]) * 16777216.0))
        else:  # rebias the exponent; round the 13 dropped bits to nearest even
            h = (a + 0xC8000FFF + ((a >> 13) & 1)) >> 13
        out_u[i] = np.uint16((h & 0xFFFF) | sign)


@jit()
def _from_half_nb(src_u, out_f, out_u):  # pragma: no cover - compiled
    for i in range(src_u.size):
        h = np.uint32(src_u[i])
        sign = (h & 0x8000) << 16
        e = h & 0x7C00
        if e == 0x7C00:  # inf / nan (payload kept)
            out_u[i] = sign | 0x7F800000 | ((h & 0x03FF) << 13)
        elif e == 0:  # zero or subnormal: m * 2**-24, exact in float32
            out_f[i] = np.float32(h & 0x03FF) * np.float32(5.9604645e-08)
            out_u[i] |= sign
        else:
            out_u[i] = sign | (((h & 0x7FFF) << 13) + 0x38000000)


_MIN_COMPILED = 4096  # below this NumPy's own conversion is as fast as the call


def astype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``x.astype(dtype, copy=False)``, float32 <-> float16 through the compiled loops."""
    dtype = np.dtype(dtype)
    if x.size >= _MIN_COMPILED and _to_half_nb is not None:
        if x.dtype == np.float32 and dtype == FLOAT16:
            src = np.ascontiguousarray(x).reshape(-1)
            out = np.empty(x.shape, FLOAT16)
            _to_half_nb(src, src.view(np.uint32), out.reshape(-1).view(np.uint16))
            return out
        if x.dtype == FLOAT16 and dtype == np.float32:
            src = np.ascontiguousarray(x).reshape(-1)
            out = np.empty(x.shape, np.float32)
            flat = out.reshape(-1)
            _from_half_nb(src.view(np.uint16), flat, flat.view(np.uint32))
            return out
    return x.astype(dtype, copy=False)
