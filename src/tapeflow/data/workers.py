"""Background threads for asynchronous stages, and the rules they follow.

- A worker owns the input iterator it advances and closes it itself when it stops (a generator
  may only be closed by the thread that runs it).
- Workers never hold a reference to the consumer's generator, so dropping the consumer's
  iterator always runs its `finally`, which stops and joins the workers.
- An exception raised by user code on a worker travels to the consumer with its traceback and a
  note saying which stage ran it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from tapeflow.data import structure
from tapeflow.data.autotune import StageStats, Tuner

_END = object()
_BUDGET_POLL_S = 0.02


def start_thread(target: Callable, *args: Any, name: str) -> threading.Thread:
    """A daemon thread (never blocks interpreter exit) that is always joined by its stage."""
    t = threading.Thread(target=target, args=args, name=f"tf.data:{name}", daemon=True)
    t.start()
    return t


def join(threads: list) -> None:
    me = threading.current_thread()
    for t in threads:
        if t is not me:
            t.join()


def annotate(exc: BaseException, where: str) -> BaseException:
    """Add a note (shown under the traceback) saying which pipeline stage raised `exc`."""
    if isinstance(exc, Exception) and hasattr(exc, "add_note"):
        note = f"(raised inside tf.data {where}, on a background thread)"
        if note not in getattr(exc, "__notes__", ()):
            exc.add_note(note)
    return exc


class Buffer:
    """A bounded FIFO between producer threads and one consumer, counting bytes for autotune."""

    def __init__(self, stats: StageStats, tuner: Tuner, capacity: int | None = None):
        self._items: deque = deque()
        self._capacity = capacity   # None: the stage's (autotuned) buffer_size
        self._cond = threading.Condition()
        self._closed = False
        self.stats = stats
        self.tuner = tuner

    @property
    def closed(self) -> bool:
        return self._closed

    def put(self, element: Any) -> bool:
        """Add an element, waiting while full; False when the consumer has gone."""
        size = structure.nbytes(element)
        with self._cond:
            while not self._closed:
                if len(self._items) >= (self._capacity or self.stats.buffer_size):
                    self._cond.wait()
                elif self._items and not self.tuner.admits(size):
                    self.stats.held_by_budget(len(self._items))
                    self._cond.wait(_BUDGET_POLL_S)   # other stages may free memory meanwhile
                else:
                    break
            if self._closed:
                return False
            self._items.append((element, size))
            self.stats.add_buffered(1, size)
            self.stats.elements += 1
            self._cond.notify_all()
            return True

    def finish(self, error: BaseException | None = None) -> None:
        """Mark the end of the stream (or an error to re-raise at the consumer)."""
        with self._cond:
            self._items.append((_END, error))
            self._cond.notify_all()

    def get(self) -> Any:
        """The next element; raises StopIteration at the end or the producer's error."""
        with self._cond:
            if not self._items:
                start = time.perf_counter()
                if self._capacity is None:
                    self.tuner.maybe_grow_buffer(self.stats)
                while not self._items:
                    self._cond.wait()
                self.stats.consumer_wait_s += time.perf_counter() - start
            element, size = self._items[0]
            if element is _END:
                if size is not None:
                    raise size
                raise StopIteration
            self._items.popleft()
            self.stats.add_buffered(-1, -size)
            self._cond.notify_all()
            return element

    def ready(self) -> bool:
        """True when `get` would not block."""
        return bool(self._items)

    def close(self) -> None:
        """Wake and release producers; they see `closed` and stop."""
        with self._cond:
            self._closed = True
            for element, size in self._items:
                if element is not _END:
                    self.stats.add_buffered(-1, -size)
            self._items.clear()
            self._cond.notify_all()


def fill(source: Iterator, buffer: Buffer, where: str,
         gate: Callable[[], Any] | None = None) -> None:
    """Worker body: move elements from `source` into `buffer` until the end or the close."""
    error = None
    try:
        while not buffer.closed:
            start, cpu = time.perf_counter(), time.thread_time()
            if gate is None:
                element = next(source, _END)
            else:
                with gate():
                    element = next(source, _END)
            buffer.stats.record_call(time.perf_counter() - start, time.thread_time() - cpu)
            if element is _END:
                break
            if not buffer.put(element):
                return
    except BaseException as e:  # noqa: BLE001 - everything goes to the consumer
        error = annotate(e, where)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
    buffer.finish(error)
