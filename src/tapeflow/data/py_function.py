"""`tf.py_function`: run arbitrary Python on eager tensors inside a pipeline (or anywhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapeflow.data import structure
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.tensor import wrap


def py_function(func: Callable, inp: Any, Tout: Any, name: str | None = None) -> Any:  # noqa: N803
    """Call `func(*inp)` eagerly and convert its results to the dtypes in `Tout`.

    Map functions already run eagerly here, so this exists for TF compatibility: code written
    for TF (where map functions are traced) keeps working unchanged.
    """
    args = [structure.to_user(structure.to_array(x)) for x in (inp or [])]
    result = func(*args)
    if isinstance(Tout, (list, tuple)):
        if not isinstance(result, (list, tuple)):
            result = [result]
        if len(result) != len(Tout):
            raise ValueError(f"py_function: {getattr(func, '__name__', func)} returned "
                             f"{len(result)} values, Tout declares {len(Tout)}")
        return [wrap(structure.to_array(r, _dtypes.as_dtype(t))) for r, t in zip(result, Tout)]
    if Tout is None:
        return None
    return wrap(structure.to_array(result, _dtypes.as_dtype(Tout)))
