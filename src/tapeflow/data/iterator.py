"""The Python iterator over a Dataset: converts elements to tensors and owns the worker threads.

Each `iter(dataset)` builds a fresh chain of generators, one per stage. Closing the chain (on
exhaustion, `close()`, `break` + garbage collection, or an error) runs every stage's `finally`,
which stops and joins that stage's threads: no thread outlives its iterator.
"""

from __future__ import annotations

import time
from typing import Any

from tapeflow.data import structure
from tapeflow.data.autotune import AutotuneReport, Tuner
from tapeflow.data.options import Options
from tapeflow.framework import errors


class IterContext:
    """What every stage of one iterator shares: options and the autotuner."""

    __slots__ = ("options", "tuner")

    def __init__(self, options: Options):
        self.options = options
        self.tuner = Tuner(options.autotune.cpu_budget, options.autotune.ram_budget,
                           options.threading.private_threadpool_size)


class Optional:
    """`tf.experimental.Optional`: a value or nothing, from `get_next_as_optional`."""

    def __init__(self, value: Any = None, has_value: bool = False):
        self._value, self._has_value = value, has_value

    def has_value(self) -> bool:
        return self._has_value

    def get_value(self) -> Any:
        if not self._has_value:
            raise errors.InvalidArgumentError("The Optional has no value.")
        return self._value


class DatasetIterator:
    """`iter(dataset)`: yields eager tensors; `get_next()` raises OutOfRangeError at the end."""

    def __init__(self, dataset: Any, to_user=structure.to_user):
        self._dataset = dataset
        self._ctx = IterContext(dataset.options())
        self._gen = dataset._iterate(self._ctx)
        self._to_user = to_user
        self._last = time.perf_counter()
        dataset._last_tuner = self._ctx.tuner

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        start = time.perf_counter()
        tuner = self._ctx.tuner
        try:
            element = next(self._gen)
        except BaseException:
            tuner.ended = tuner.ended or time.perf_counter()
            raise
        end = time.perf_counter()
        tuner.consumer_wait_s += end - start
        tuner.elements += 1
        return self._to_user(element)

    def get_next(self) -> Any:
        """The next element; `OutOfRangeError` at the end of the sequence (TF's contract)."""
        try:
            return next(self)
        except StopIteration:
            raise errors.OutOfRangeError("End of sequence") from None

    def get_next_as_optional(self) -> Optional:
        try:
            return Optional(next(self), True)
        except StopIteration:
            return Optional()

    def autotune_report(self) -> AutotuneReport:
        """Knob values, buffered bytes and the bottleneck stage of this iterator."""
        return self._ctx.tuner.report()

    def close(self) -> None:
        """Stop and join every worker thread of this iterator (idempotent)."""
        gen = self.__dict__.get("_gen")
        if gen is not None:
            gen.close()

    def __del__(self) -> None:
        self.close()
