"""float16 / bfloat16 inputs of heavy kernels computed in float32 and rounded back.

NumPy has no BLAS path for 16-bit floats (a float16 matmul runs ~400x slower than float32, and
a bfloat16 one returns float32), and the numba conv/pool loops are compiled for float32/64.
TensorFlow's CPU kernels also accumulate 16-bit inputs in float32. ``widened`` wraps such a
kernel: 16-bit inputs are cast up, the float32 result is rounded to the input dtype, and
float32/float64 inputs pay one dtype check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

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
        wide = [a.astype(np.float32) if getattr(a, "dtype", None) == low else a for a in arrays]
        out = kernel(*wide, **attrs)
        if isinstance(out, tuple):
            return tuple(_narrow(o, low) for o in out)
        return _narrow(out, low)

    return run


def _narrow(out: Any, low: np.dtype) -> Any:
    out = np.asarray(out)
    return out.astype(low) if out.dtype == np.float32 else out
