"""A pool of worker processes running one map function, for Python-heavy `map` calls.

Threads cannot run pure-Python code in parallel (the GIL), so `Dataset.map(...,
use_processes=True)` sends elements to worker processes instead:

- processes come from the 'forkserver' start method ('spawn' where there is none): never a
  plain fork of a process that runs BLAS or pipeline threads. The fork server preloads
  tapeflow, so a pool starts in milliseconds once the server is up (about a second, once);
- the map function travels pickled, so it must be importable: a top-level function or a
  picklable callable object (not a lambda or a nested function). A top-level `tf.function`
  travels by name and traces in each worker, so workers run generated code;
- element arrays travel through shared memory (`tapeflow.data.shm`); the pipes carry only
  indices, seeds, block names and layouts. Each side recycles the blocks it writes: the
  consumer's input blocks come back when their result arrives, a worker's output blocks when
  the consumer names them (read) in its next task for that worker;
- a worker sets `context.state.seed_offset` around each call exactly as a map thread does, so
  random ops give the same per-element values with processes as with threads;
- an exception in the map function is re-raised at the consumer (rebuilt from its pickle, or as
  `UnknownError` when it cannot be pickled), with the worker's traceback text as a note.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
from multiprocessing import connection, spawn
from typing import Any

from tapeflow.data import shm
from tapeflow.framework import errors
from tapeflow.ops import random_ops

SHUTDOWN_GRACE_S = 10.0  # how long close() lets a worker finish its current call


class _ByName:
    """Pickles a module-level callable object (a `tf.function`, say) as its module and name;
    the worker imports it and gets its own copy (which traces in the worker)."""

    def __init__(self, module: str, qualname: str):
        self.module, self.qualname = module, qualname

    def __reduce__(self) -> tuple:
        return _import_by_name, (self.module, self.qualname)


def _import_by_name(module: str, qualname: str) -> Any:
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _by_name(fn: Any) -> _ByName | None:
    """`fn` as a name when importing that name gives `fn` back (decorated top-level objects)."""
    inner = getattr(fn, "python_function", None) or getattr(fn, "__wrapped__", None)
    module = getattr(inner, "__module__", None)
    qualname = getattr(inner, "__qualname__", "")
    if module is None or "<" in qualname:
        return None
    try:
        found = _import_by_name(module, qualname)
    except (ImportError, AttributeError):
        return None
    return _ByName(module, qualname) if found is fn else None


def pickle_function(fn: Any, fn_label: str) -> bytes:
    """`fn` pickled for the workers; a TypeError naming it when it cannot be."""
    try:
        return pickle.dumps(fn)
    except Exception as e:  # noqa: BLE001 - pickling raises many types
        named = _by_name(fn)
        if named is not None:
            return pickle.dumps(named)
        raise TypeError(
            f"map(use_processes=True): map_func {fn_label} cannot be pickled "
            f"({type(e).__name__}: {e}). Worker processes receive the function by pickling: "
            f"define it at module top level (not a lambda or a nested function) or pass a "
            f"picklable callable object.\n{errors.user_line()}") from None


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])  # used when the server starts (once)
        return ctx
    return multiprocessing.get_context("spawn")


def _main_module_data(fn_bytes: bytes, method: str) -> dict:
    """How a worker re-imports the user's `__main__` when the function lives there (spawn does
    this itself; Python 3.11's fork server does not, and where one does, `prepare` skips it)."""
    if b"__main__" not in fn_bytes or method == "spawn":
        return {}
    data = spawn.get_preparation_data("tf.data")
    return {k: v for k, v in data.items() if k in ("init_main_from_name", "init_main_from_path")}


class ProcessPool:
    """`size` worker processes for one iterator; the consumer submits and receives tasks."""

    def __init__(self, fn_bytes: bytes, size: int, fn_label: str):
        ctx = _context()
        self.fn_label = fn_label
        main = _main_module_data(fn_bytes, ctx.get_start_method())
        seed = random_ops.get_global_seed()
        self._conns: list = []
        self._procs: list = []
        self._load: list[int] = []
        self._inputs: dict = {}   # task index -> input block name
        self._arena = shm.Arena(keep=2 * size)
        self._attached = shm.Attachments(keep=4 * size)
        self._read: list[list] = [[] for _ in range(size)]   # per worker: blocks to give back
        self._seen: list[set] = [set() for _ in range(size)]  # per worker: its output blocks
        try:
            for i in range(size):
                mine, theirs = ctx.Pipe()
                self._conns.append(mine)
                proc = ctx.Process(target=_worker_main, name=f"tf.data:process-map-{i}",
                                   daemon=True, args=(theirs, fn_bytes, list(sys.path), main,
                                                      seed, os.getpid()))
                proc.start()
                theirs.close()
                self._procs.append(proc)
                self._load.append(0)
        except BaseException:  # stop the workers already started
            for conn in self._conns[len(self._procs):]:
                conn.close()
            del self._conns[len(self._procs):]
            self.close()
            raise

    def __len__(self) -> int:
        """Number of worker processes."""
        return len(self._procs)

    @property
    def in_flight(self) -> int:
        return len(self._inputs)

    def submit(self, index: int, offset: int | None, element: Any) -> None:
        """Send one element to the least loaded worker."""
        w = min(range(len(self._conns)), key=self._load.__getitem__)
        name, layout = shm.write(element, self._arena)
        self._inputs[index] = name
        self._load[w] += 1
        read, self._read[w] = self._read[w], []
        try:
            self._conns[w].send((index, offset, name, layout, read))
        except OSError:
            pass  # the worker died; receive() reports it

    def receive(self) -> tuple[int, Any, BaseException | None, float, float]:
        """Wait for the next result: (index, value, error, call wall s, call CPU s)."""
        sentinels = {p.sentinel: w for w, p in enumerate(self._procs)}
        ready = connection.wait(self._conns + list(sentinels))
        for w, conn in enumerate(self._conns):
            if conn in ready or conn.poll(0):
                return self._take(w)
        dead = next(sentinels[s] for s in ready if s in sentinels)
        raise self._died(dead)

    def _take(self, w: int) -> tuple[int, Any, BaseException | None, float, float]:
        try:
            msg = self._conns[w].recv()
        except (EOFError, OSError):
            self._procs[w].join(1.0)
            raise self._died(w) from None
        self._load[w] -= 1
        index = msg[1]
        name = self._inputs.pop(index)
        if name is not None:
            self._arena.give_back(name)
        if msg[0] == "ok":
            value = shm.read(msg[2], msg[3], self._attached)
            if msg[2] is not None:
                self._seen[w].add(msg[2])
                self._read[w].append(msg[2])
            return index, value, None, msg[4], msg[5]
        return index, None, self._remote_error(msg, self._procs[w].pid), msg[6], msg[7]

    def _died(self, w: int) -> errors.UnknownError:
        proc = self._procs[w]
        return errors.UnknownError(
            None, None, f"tf.data map worker process {proc.pid} (map function "
            f"{self.fn_label}) exited unexpectedly with code {proc.exitcode}")

    def _remote_error(self, msg: tuple, pid: int) -> BaseException:
        payload, type_name, text, tb = msg[2:6]
        exc = None
        if payload is not None:
            try:
                exc = pickle.loads(payload)
            except Exception:  # noqa: BLE001 - fall back to the text
                exc = None
        if not isinstance(exc, BaseException):
            exc = errors.UnknownError(None, None, f"{type_name}: {text}")
        note = (f"(raised inside tf.data map function {self.fn_label}, in worker process {pid}; "
                f"the worker's traceback follows)\n{tb.rstrip()}")
        if hasattr(exc, "add_note"):
            exc.add_note(note)
        else:  # Python 3.10: the note is kept, though tracebacks do not print it
            exc.__notes__ = [*getattr(exc, "__notes__", ()), note]
        return exc

    def close(self) -> None:
        """Stop the workers (each finishes its current call), free every shared block, join."""
        for conn in self._conns:
            try:
                conn.send(None)
            except OSError:
                pass  # the worker already exited; join below reaps it
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        open_conns = list(self._conns)
        while open_conns and time.monotonic() < deadline:
            for conn in connection.wait(open_conns, timeout=deadline - time.monotonic()):
                try:
                    conn.recv()  # a result nobody will read; its worker frees the block
                except (EOFError, OSError):
                    open_conns.remove(conn)
        self._attached.close()
        for proc, seen in zip(self._procs, self._seen):
            proc.join(max(deadline - time.monotonic(), 0.0))
            if proc.is_alive():
                proc.terminate()
                proc.join()
            if proc.exitcode != 0:  # it could not free its blocks
                for name in seen:
                    shm.discard(name)
        for conn in self._conns:
            conn.close()
        self._arena.close()
        self._inputs.clear()


def _worker_main(conn: Any, fn_bytes: bytes, sys_path: list, main: dict,
                 global_seed: int | None, owner_pid: int) -> None:
    """Worker process body: run tasks until the consumer sends None or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the consumer's to handle
    sys.path[:] = sys_path
    random_ops.set_seed(global_seed)
    fn, failure = None, None
    try:
        if main:
            spawn.prepare(main)
        fn = pickle.loads(fn_bytes)
    except BaseException as e:  # noqa: BLE001 - reported with every task
        failure = e
    arena, attached = shm.Arena(owner_pid=owner_pid), shm.Attachments()
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                break
            if task is None:
                break
            for name in task[4]:
                arena.give_back(name)
            conn.send(_run_task(fn, failure, task, arena, attached))
    finally:
        attached.close()
        arena.close()
        conn.close()


def _run_task(fn: Any, failure: BaseException | None, task: tuple, arena: shm.Arena,
              attached: shm.Attachments) -> tuple:
    from tapeflow.data.mapping import call_user_fn

    index, offset, name, layout, _ = task
    start, cpu = time.perf_counter(), time.process_time()
    try:
        if failure is not None:
            raise failure
        out = call_user_fn(fn, shm.read(name, layout, attached), offset)
        out_name, out_layout = shm.write(out, arena)
        return ("ok", index, out_name, out_layout,
                time.perf_counter() - start, time.process_time() - cpu)
    except BaseException as e:  # noqa: BLE001 - everything goes to the consumer
        return ("error", index, _pickled(e), type(e).__qualname__, str(e),
                traceback.format_exc(), time.perf_counter() - start, time.process_time() - cpu)


def _pickled(exc: BaseException) -> bytes | None:
    try:
        return pickle.dumps(exc)
    except Exception:  # noqa: BLE001 - the consumer rebuilds it from its text
        return None
