"""`tf.math.sobol_sample`: points of the Sobol low-discrepancy sequence (Joe and Kuo's direction
numbers, unscrambled; SciPy's generator), starting after the all-zero first point as
TensorFlow's op does, `skip` points further on."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op


@op("SobolSample", shape=lambda dim, n, skip, *, dtype: ((None, None), dtype))
def _sobol(dim, num_results, skip, *, dtype):
    import warnings

    from scipy.stats import qmc

    engine = qmc.Sobol(int(dim), scramble=False)
    engine.fast_forward(1 + int(skip))
    with warnings.catch_warnings():  # SciPy's note that n should be a power of 2
        warnings.simplefilter("ignore", UserWarning)
        return engine.random(int(num_results)).astype(dtype._np)


@export("math.sobol_sample")
def sobol_sample(dim: Any, num_results: Any, skip: Any = 0, dtype: Any = _dtypes.float32,
                 name: str | None = None) -> Any:
    """[num_results, dim] points of the Sobol sequence in [0, 1)."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.float32, _dtypes.float64):
        raise TypeError(f"sobol_sample: dtype must be float32 or float64, got {dtype.name}")
    return apply(_sobol, *(convert_to_tensor(np.int32(np.asarray(v))) for v in
                           (dim, num_results, skip)), dtype=dtype)
