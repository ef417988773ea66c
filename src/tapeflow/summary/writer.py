"""``tf.summary`` writers: where summaries go, at which step, and whether to record at all.

A `SummaryWriter` owns one event file (the tensorboard package's ``EventFileWriter``, which
writes TFRecord-framed ``Event`` protos with CRCs). ``as_default()`` makes it the target of
``tf.summary.scalar`` & co. on this thread; the default step is process-wide, as
``tf.summary.experimental.set_step`` is in TensorFlow.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.summary import _tb


class _State(threading.local):
    def __init__(self) -> None:
        self.writers: list[SummaryWriter] = []
        self.record: list[Any] = []


_state = _State()
_step: list[Any] = [None]


class SummaryWriter:
    """Writes ``Event`` protos to ``logdir/events.out.tfevents.<time>.<host>.<pid>.v2``."""

    def __init__(self, logdir: str, max_queue: int = 10, flush_millis: int = 120000,
                 filename_suffix: str = ".v2", name: str | None = None) -> None:
        self.logdir = os.fspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        cls = _tb.module("summary.writer.event_file_writer").EventFileWriter
        self._writer = cls(self.logdir, max_queue_size=max_queue,
                           flush_secs=max(flush_millis / 1000.0, 0.001),
                           filename_suffix=filename_suffix)
        self._closed = False

    @contextlib.contextmanager
    def as_default(self, step: Any = None) -> Iterator[SummaryWriter]:
        """Summaries inside go to this writer (at `step`, when given)."""
        _state.writers.append(self)
        saved = _step[0]
        if step is not None:
            _step[0] = step
        try:
            yield self
        finally:
            _state.writers.pop()
            if step is not None:
                _step[0] = saved
            self.flush()

    def set_as_default(self, step: Any = None) -> None:
        _state.writers.append(self)
        if step is not None:
            _step[0] = step

    def init(self) -> None:
        """Nothing to do: the file is open from construction on (TF API compatibility)."""

    def add_event(self, event: Any) -> None:
        if self._closed:
            raise RuntimeError(f"SummaryWriter for {self.logdir} is closed")
        if not event.wall_time:
            event.wall_time = time.time()
        self._writer.add_event(event)

    def add_summary(self, summary: Any, step: int) -> None:
        event_pb2 = _tb.proto("event_pb2")
        self.add_event(event_pb2.Event(step=int(step), summary=summary))

    def flush(self) -> None:
        if not self._closed:
            self._writer.flush()

    def close(self) -> None:
        if not self._closed:
            self._writer.close()
            self._closed = True

    def __repr__(self) -> str:
        return f"<SummaryWriter logdir={self.logdir!r}>"


class _NoopWriter:
    """``tf.summary.create_noop_writer()``: a default writer that records nothing."""

    @contextlib.contextmanager
    def as_default(self, step: Any = None) -> Iterator[_NoopWriter]:
        _state.writers.append(self)  # type: ignore[arg-type]
        try:
            yield self
        finally:
            _state.writers.pop()

    def set_as_default(self, step: Any = None) -> None:
        _state.writers.append(self)  # type: ignore[arg-type]

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    init = flush


def create_file_writer(logdir: str, max_queue: int | None = None,
                       flush_millis: int | None = None, filename_suffix: str | None = None,
                       name: str | None = None, experimental_trackable: bool = False
                       ) -> SummaryWriter:
    """A writer for event files under `logdir` (``tf.summary.create_file_writer``)."""
    return SummaryWriter(logdir, max_queue if max_queue is not None else 10,
                         flush_millis if flush_millis is not None else 120000,
                         filename_suffix if filename_suffix is not None else ".v2", name)


def create_noop_writer() -> _NoopWriter:
    return _NoopWriter()


def default_writer() -> Any:
    return _state.writers[-1] if _state.writers else None


def flush(writer: Any = None, name: str | None = None) -> None:
    """Flush `writer` (default: the current default writer)."""
    target = writer if writer is not None else default_writer()
    if target is not None:
        target.flush()


def set_step(step: Any) -> None:
    """``tf.summary.experimental.set_step``: the step summaries use when given none."""
    _step[0] = step


def get_step() -> Any:
    return _step[0]


def resolve_step(step: Any) -> int:
    if step is None:
        step = _step[0]
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument "
                         "or through tf.summary.experimental.set_step()")
    return int(np.asarray(step.numpy() if hasattr(step, "numpy") else step))


@contextlib.contextmanager
def record_if(condition: Any) -> Iterator[None]:
    """Summaries inside are written only while `condition` (a bool, tensor or callable) holds."""
    _state.record.append(condition)
    try:
        yield
    finally:
        _state.record.pop()


def should_record_summaries() -> bool:
    """True when a writer is set and every enclosing ``record_if`` holds."""
    writer = default_writer()
    if writer is None or isinstance(writer, _NoopWriter):
        return False
    for condition in _state.record:
        value = condition() if callable(condition) else condition
        if not bool(np.asarray(value.numpy() if hasattr(value, "numpy") else value)):
            return False
    return True
