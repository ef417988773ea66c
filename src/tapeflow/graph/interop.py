"""Inter-op parallelism: a compiled graph runs on two threads, the caller's and one worker.

A training step is not one chain. In the backward pass each layer's weight gradient hangs off
the activation-gradient chain (only the optimizer reads it, at the very end), and a reversible
network rebuilds the next block's input while the current block's gradients are taken.
``graph.schedule`` decides, from static cost estimates, which pure kernels go to the worker and
in what order each thread meets its nodes; the generated code hands a node over with
``launch`` (its outputs become ``Pending``) and waits where a value is first read on the
calling thread and before the function returns. Variable writes (assignments, optimizer
updates) replace a variable's buffer instead of writing into it, so a value a kernel is still
reading never changes, and buffer reuse (``codegen._reusable``) only overwrites an array its
writer alone reads.

NumPy's products and the compiled loops release the GIL, so the two run in parallel. The
kernels see the busy core (``kernels.parallel.idle_core``) and stop splitting their rows in two.

``tf.config.threading.set_inter_op_parallelism_threads(1)`` turns this off (graphs compiled
afterwards run every node in order on the calling thread), as does a single-core machine.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from tapeflow.framework import threads
from tapeflow.kernels import parallel


class _Worker:
    """The worker thread: runs submitted calls in order. When it runs out of calls it joins the
    kernel the calling thread is running alone, if any (``parallel.join_open``), a slice at a
    time until new work arrives: a convolution the caller started beside the worker's kernel
    (so on one core) finishes on both once the worker's ends."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="tapeflow-interop", daemon=True).start()

    def submit(self, fn: Callable, args: tuple, kwargs: dict) -> Future:
        future: Future = Future()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def _loop(self) -> None:
        _on_worker.flag = True
        jobs = self._jobs
        while True:
            future, fn, args, kwargs = jobs.get()
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the reader
                future.set_exception(e)
            del future, fn, args, kwargs  # hold no values while idle
            if jobs.empty():
                parallel.join_open(lambda: not jobs.empty())


_worker: _Worker | None = None


def enabled() -> bool:
    """Whether graphs compiled now hand nodes to the worker thread (``graph.schedule``): the
    thread policy's inter-op count (``framework.threads``)."""
    return threads.inter_op_threads() > 1


def _forget_pool() -> None:
    """A forked child has no worker thread: it must start its own."""
    global _worker
    _worker = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


_on_worker = threading.local()


def submit(fn: Callable, *args: Any, **kwargs: Any) -> Future:
    """Run fn(*args, **kwargs) on the inter-op worker thread (at once, on this thread, when
    called from the worker itself: a graph run there must not wait for its own thread)."""
    global _worker
    if getattr(_on_worker, "flag", False):
        done: Future = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the reader, as the pool does
            done.set_exception(e)
        return done
    if _worker is None:
        _worker = _Worker()
    return _worker.submit(fn, args, kwargs)


class Pending:
    """An output of a node handed to the worker: ``get()`` waits for it. Each output of a
    multi-output kernel has its own future, so one output still to be read (a batch norm's
    mean) does not keep the others (its normalized activations) alive."""

    __slots__ = ("future",)

    def __init__(self, future: Future):
        self.future = future

    def get(self) -> Any:
        future = self.future
        if not future.done():  # meanwhile, help with the worker's kernel if it runs alone
            parallel.join_open(future.done)
        return future.result()


def _run(line: int, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Worker side: resolve inputs still pending (earlier worker nodes, finished by now: the
    worker runs in order), then the kernel; a failure remembers its generated line."""
    args = tuple(a.get() if type(a) is Pending else a for a in args)
    kwargs = {k: v.get() if type(v) is Pending else v for k, v in kwargs.items()}
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        e._tapeflow_line = line
        raise


def _run_split(futures: tuple[Future, ...], line: int, fn: Callable, args: tuple,
               kwargs: dict) -> None:
    try:
        values = _run(line, fn, args, kwargs)
    except BaseException as e:  # noqa: BLE001 - every output's reader sees the failure
        for f in futures:
            f.set_exception(e)
        return
    for f, value in zip(futures, values):
        f.set_result(value)


def launch(spec: tuple[int, Callable, int | None], *args: Any, **kwargs: Any) -> Any:
    """Hand one node to the worker; `spec` is (its generated line, the kernel, its output
    count or None for one output). Returns a Pending, or a tuple of them."""
    line, fn, outputs = spec
    if outputs is None:
        return Pending(submit(_run, line, fn, args, kwargs))
    futures = tuple(Future() for _ in range(outputs))
    submit(_run_split, futures, line, fn, args, kwargs)
    return tuple(Pending(f) for f in futures)
