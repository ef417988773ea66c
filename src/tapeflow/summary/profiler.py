"""``tf.profiler.experimental``: ``start(logdir)`` / ``stop()`` / ``Trace(name)`` write a
Chrome trace-event file that TensorBoard's profile plugin, Perfetto and chrome://tracing open.

The file is ``logdir/plugins/profile/<run>/<host>.trace.json.gz`` (the profile plugin's
layout). It holds the ``Trace`` spans opened on any thread while profiling (Keras's
``profile_batch`` opens one per step), each on its thread's track; what every other thread was
doing, sampled every 2 ms (the input pipeline's ``tf.data:*`` threads among them: the function
running, merged into spans; waiting is left out); and, for every function traced or handed to
`add_function` while profiling, one run of its graph node by node on an "executor" track: op
type as the event name, node name, source line and output shapes as arguments.
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import socket
import sys
import threading
import time
from typing import Any

import numpy as np

_lock = threading.Lock()
_session: dict[str, Any] = {}
_EXECUTOR_TID = 1_000_000


def _now_us() -> float:
    return time.perf_counter() * 1e6


def _observe(concrete: Any, tensors: list) -> None:
    add_function(concrete, [np.asarray(getattr(t, "_value", t)) for t in tensors])


def start(logdir: str, options: Any = None) -> None:
    """Start profiling; events are written by `stop`."""
    from tapeflow.graph import function

    with _lock:
        if _session:
            raise RuntimeError("Another profiler session is running (call "
                               "tf.profiler.experimental.stop() first).")
        _session.update(logdir=os.fspath(logdir), events=[], functions=[], t0=_now_us(),
                        sampler=_Sampler())
    function.trace_observers.append(_observe)
    _session["sampler"].start()


def add_function(concrete: Any, arrays: list) -> None:
    """Profile one run of `concrete` on `arrays` when the session stops."""
    with _lock:
        if _session:
            _session["functions"].append((concrete, arrays))


def active() -> bool:
    return bool(_session)


def stop(save: bool = True) -> str | None:
    """Stop profiling and write the trace; returns its path."""
    from tapeflow.graph import function

    if _observe in function.trace_observers:
        function.trace_observers.remove(_observe)
    with _lock:
        if not _session:
            raise RuntimeError("The profiler is not running (tf.profiler.experimental.start "
                               "was not called).")
        session = dict(_session)
        _session.clear()
    session["sampler"].finish()
    if not save:
        return None
    events = list(session["events"]) + session["sampler"].events
    for concrete, arrays in session["functions"]:
        events += node_events(concrete, arrays)
    return write_trace(session["logdir"], events)


def node_events(concrete: Any, arrays: list) -> list[dict]:
    """One profiled run of `concrete`, one complete event per node, on the executor track."""
    from tapeflow.summary.run_metadata import profile_run

    times, _ = profile_run(concrete, arrays)
    return timed_node_events(concrete, times, _now_us())


def timed_node_events(concrete: Any, times: dict, start_us: float) -> list[dict]:
    """Events for `concrete`'s nodes taking `times[node]` seconds each, end to end from
    `start_us` (perf_counter microseconds, the trace's clock)."""
    from tapeflow.summary.tf_ops import tf_type

    t = start_us
    events = []
    for node in concrete.graph.nodes:
        dur = times.get(node, 0.0) * 1e6
        events.append({"name": tf_type(node), "ph": "X", "ts": t, "dur": dur, "pid": 1,
                       "tid": _EXECUTOR_TID, "cat": "op",
                       "args": {"node": node.name, "function": concrete.name,
                                "source": node.location,
                                "outputs": [str(o.shape) for o in node.outputs]}})
        t += dur
    return events


def add_events(events: list[dict]) -> None:
    """Add finished events to the running session's trace."""
    with _lock:
        if _session:
            _session["events"].extend(events)


def write_trace(logdir: str, events: list[dict]) -> str:
    """Write a gzipped Chrome trace with thread names; returns the path."""
    run = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
    directory = os.path.join(os.fspath(logdir), "plugins", "profile", run)
    os.makedirs(directory, exist_ok=True)
    names = {e["tid"]: e.pop("thread_name") for e in events if "thread_name" in e}
    names.setdefault(_EXECUTOR_TID, "tapeflow executor (graph nodes)")
    meta = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "tapeflow (CPU)"}}]
    meta += [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
             for tid, name in names.items()]
    path = os.path.join(directory, f"{socket.gethostname()}.trace.json.gz")
    with gzip.open(path, "wt") as f:
        json.dump({"displayTimeUnit": "ms", "traceEvents": meta + events}, f)
    return path


_IDLE_FILES = ("threading.py", "queue.py", "selectors.py", "socket.py", "connection.py")
_MAX_SAMPLED_EVENTS = 200_000


class _Sampler(threading.Thread):
    """Every `interval` s, the function each thread is running; consecutive samples of the
    same function become one span on that thread's track."""

    def __init__(self, interval: float = 0.002) -> None:
        super().__init__(name="tapeflow profiler sampler", daemon=True)
        self.interval = interval
        self.events: list[dict] = []
        self._stop_event = threading.Event()
        self._open: dict[int, list] = {}  # thread id -> [label, start us, last us]

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            now = _now_us()
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == self.ident or ident not in names:
                    continue
                code = frame.f_code
                label = None if os.path.basename(code.co_filename) in _IDLE_FILES else \
                    f"{code.co_name} ({os.path.basename(code.co_filename)})"
                current = self._open.get(ident)
                if current is not None and current[0] == label and \
                        now - current[2] <= 3e6 * self.interval:
                    current[2] = now
                    continue
                self._close(ident)
                if label is not None:
                    self._open[ident] = [label, now, now, names[ident]]

    def _close(self, ident: int) -> None:
        current = self._open.pop(ident, None)
        if current is None or len(self.events) >= _MAX_SAMPLED_EVENTS:
            return
        label, start, last, thread = current
        self.events.append({"name": label, "ph": "X", "ts": start,
                            "dur": last - start + self.interval * 1e6, "pid": 1, "tid": ident,
                            "cat": "sampled", "thread_name": thread})

    def finish(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join()
        for ident in list(self._open):
            self._close(ident)


class Trace:
    """``with tf.profiler.experimental.Trace("train", step_num=3):`` marks a span."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        self.name, self.args = name, kwargs

    def __enter__(self) -> Trace:
        self._start = _now_us()
        return self

    def __exit__(self, *exc: Any) -> None:
        if not _session:
            return
        thread = threading.current_thread()
        event = {"name": self.name, "ph": "X", "ts": self._start,
                 "dur": _now_us() - self._start, "pid": 1, "tid": thread.ident or 0,
                 "thread_name": thread.name, "args": {k: str(v) for k, v in self.args.items()}}
        with _lock:
            if _session:
                _session["events"].append(event)


class ProfilerOptions:
    """Accepted for API compatibility (host/python/device tracer levels are not used)."""

    def __init__(self, host_tracer_level: int = 2, python_tracer_level: int = 0,
                 device_tracer_level: int = 1, delay_ms: int | None = None) -> None:
        self.host_tracer_level = host_tracer_level
        self.python_tracer_level = python_tracer_level
        self.device_tracer_level = device_tracer_level
        self.delay_ms = delay_ms
