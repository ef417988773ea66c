"""`tf.io.decode_raw`: reinterpret the bytes of a string tensor as numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.data import structure
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.tensor import EagerTensor, wrap


def decode_raw(input_bytes: Any, out_type: Any, little_endian: bool = True,
               fixed_length: int | None = None, name: str | None = None) -> EagerTensor:
    """Each string becomes a vector of `out_type` values (all strings must have equal length)."""
    data = structure.to_array(input_bytes)
    dtype = np.dtype(_dtypes.as_dtype(out_type)._np).newbyteorder("<" if little_endian else ">")
    rows = [np.frombuffer(b, dtype=dtype).astype(dtype.newbyteorder("=")) for b in data.ravel()]
    if data.ndim == 0:
        return wrap(rows[0])
    return wrap(np.stack(rows).reshape(data.shape + (-1,)))
