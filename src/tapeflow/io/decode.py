"""`tf.io.decode_raw`: reinterpret the bytes of a string tensor as numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.data import structure
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.tensor import EagerTensor, wrap


def decode_raw(input_bytes: Any, out_type: Any, little_endian: bool = True,
               fixed_length: int | None = None, name: str | None = None) -> EagerTensor:
    """Each string becomes a vector of `out_type` values (all strings must have equal length)."""
    data = structure.to_array(input_bytes)
    dtype = np.dtype(_dtypes.as_dtype(out_type)._np).newbyteorder("<" if little_endian else ">")
    items = data.ravel().tolist()
    lengths = {len(b) for b in items}
    if len(lengths) > 1:
        raise errors.InvalidArgumentError(
            f"decode_raw: input strings must all have the same length, got lengths "
            f"{sorted(lengths)[:4]}\n{errors.user_line()}")
    flat = np.frombuffer(b"".join(items), dtype=dtype).astype(dtype.newbyteorder("="))
    return wrap(flat.reshape(data.shape + (-1,)))
