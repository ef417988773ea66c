"""Map-then-batch fusion: run a map function once on a whole batch instead of per element.

`ds.map(f).batch(n)` may compute `f` on the stacked input batch when that gives the same result as
stacking `f` of each element, as it does for element-wise arithmetic, casts and parsing. Whether
it does is checked, not assumed: before the first fused batch, the first input elements (up to
64) are mapped both ways and must agree exactly (structure, shapes, dtypes, values); otherwise,
or if the fused call fails or returns a wrongly shaped batch later, elements are mapped one by
one. The verdict is kept per map function and input structure, so the check runs once; it calls
the function on those elements an extra time.
Ops whose per-element form differs from their batched one (`parse_single_example` on a vector)
consult `active()` to take their batched form while a fused call runs.

Switch it off with `options.experimental_optimization.map_and_batch_fusion = False`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from tapeflow.data import structure

_state = threading.local()


def active() -> bool:
    """True while a map function runs on a whole batch (ops may take their batched form)."""
    return getattr(_state, "on", False)


@contextmanager
def batched_call() -> Iterator[None]:
    previous = active()
    _state.on = True
    try:
        yield
    finally:
        _state.on = previous


def call_batched(fn: Callable, batch: Any, size: int, call_user_fn: Callable) -> Any | None:
    """`fn` on a stacked batch of `size` elements; None when it fails or is not a batch."""
    try:
        with batched_call():
            out = call_user_fn(fn, batch, None)
    except Exception:  # noqa: BLE001 - the caller maps element by element instead
        return None
    leaves = structure.flatten(out)
    if not leaves or not all(isinstance(a, np.ndarray) and a.ndim >= 1 and a.shape[0] == size
                             for a in leaves):
        return None
    return out


def same_as_stacked(batched: Any, per_element: list) -> bool:
    """Whether `batched` equals the stack of `per_element` outputs exactly."""
    try:
        structure.assert_same_structure(batched, per_element[0], "fusion check")
    except (TypeError, ValueError):
        return False
    flat = structure.flatten(batched)
    for i, element in enumerate(per_element):
        for a, b in zip(flat, structure.flatten(element)):
            if not isinstance(b, np.ndarray) or a.dtype != b.dtype or a.shape[1:] != b.shape:
                return False
            row = a[i]
            if a.dtype == object:
                if row.tolist() != b.tolist():
                    return False
            elif not np.array_equal(row, b, equal_nan=a.dtype.kind in "fc"):
                return False
    return True


def fused_batches(batch_ds: Any, ctx: Any) -> Iterator[Any] | None:
    """The batches of `map(f).batch(n)` computed by calling `f` on whole input batches, or None
    when the pipeline is not of that form, fusion is off, or `f` does not pass the check."""
    from tapeflow.data.batching import BatchDataset
    from tapeflow.data.mapping import MapDataset, ParallelMapDataset

    mapped = batch_ds._inputs[0]
    if type(mapped) not in (MapDataset, ParallelMapDataset):
        return None
    if ctx.options.experimental_optimization.map_and_batch_fusion is False:
        return None
    n, drop = batch_ds._batch_size, batch_ds._drop_remainder
    if not _fuses(mapped, n):
        return None
    raw = BatchDataset(mapped._inputs[0], n, drop)
    fn = _BatchFunction(mapped._fn)
    if isinstance(mapped, ParallelMapDataset):
        stage = ParallelMapDataset(raw, fn, mapped._parallelism, mapped._deterministic)
        stage._tune_fn = mapped._fn
    else:
        stage = MapDataset(raw, fn)
    return stage._iterate(ctx)


# Verdicts per map function and input element structure: a pipeline rebuilt every epoch
# around the same function is checked once.
_verdicts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_verdicts_lock = threading.Lock()
_CHECK_ELEMENTS = 64


def _fuses(mapped: Any, n: int) -> bool:
    fn = mapped._fn
    try:
        key = (repr(mapped._inputs[0].element_spec), min(n, _CHECK_ELEMENTS))
        with _verdicts_lock:
            verdict = _verdicts.setdefault(fn, {}).get(key)
    except TypeError:   # a callable that cannot be weakly referenced: check every time
        key, verdict = None, None
    if verdict is None:
        verdict = _check(mapped, min(n, _CHECK_ELEMENTS))
        if key is not None:
            with _verdicts_lock:
                _verdicts[fn][key] = verdict
    return verdict


def _check(mapped: Any, n: int) -> bool:
    """Map the first `n` input elements one by one and as a batch; fuse if they agree."""
    from tapeflow.data.batching import stack
    from tapeflow.data.iterator import IterContext
    from tapeflow.data.mapping import call_user_fn

    source = mapped._inputs[0]
    gen = source._iterate(IterContext(source.options()))
    try:
        elements = [e for _, e in zip(range(n), gen)]
    finally:
        gen.close()
    if not elements:
        return False
    try:
        per_element = [call_user_fn(mapped._fn, e, None) for e in elements]
        batch = stack(elements)
    except Exception:  # noqa: BLE001 - the ordinary path reports errors where they occur
        return False
    out = call_batched(mapped._fn, batch, len(elements), call_user_fn)
    return out is not None and same_as_stacked(out, per_element)


class _BatchFunction:
    """Calls the user's map function on a whole batch; element by element if that fails."""

    def __init__(self, fn: Callable):
        self._fn = fn
        self.__qualname__ = f"fused batch of {getattr(fn, '__qualname__', repr(fn))}"

    def __call__(self, *args: Any) -> Any:
        from tapeflow.data.batching import stack
        from tapeflow.data.mapping import call_user_fn

        batch = structure.normalize(args[0] if len(args) == 1 else args)
        leaves = structure.flatten(batch)
        size = leaves[0].shape[0]
        out = call_batched(self._fn, batch, size, call_user_fn)
        if out is not None:
            return out
        return stack([call_user_fn(self._fn, _row(batch, i), None) for i in range(size)])


def _row(batch: Any, i: int) -> Any:
    return structure.map_structure(lambda a: a[i, ...], batch)
