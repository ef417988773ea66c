"""``tf.summary.trace_on`` / ``trace_export``: the graphs of functions traced in between,
and (``profiler=True``) their per-node compute time and memory as run metadata.

As in TensorFlow, a function is recorded when it is traced while tracing is on (the seed's
"trace the first time the function is called"); the tensors of that first call are kept so
``trace_export`` can profile a run of exactly that graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.summary import _tb, writer

_recorded: list[tuple[Any, list]] = []
_options = {"on": False, "graph": True, "profiler": False}


def _observe(concrete: Any, tensors: list) -> None:
    _recorded.append((concrete, [np.asarray(getattr(t, "_value", t)) for t in tensors]))


def trace_on(graph: bool = True, profiler: bool = False, profiler_outdir: str | None = None
             ) -> None:
    """Start recording the graphs (and profiles) of functions traced from now on."""
    from tapeflow.graph import function

    if _observe not in function.trace_observers:
        function.trace_observers.append(_observe)
    _recorded.clear()
    _options.update(on=True, graph=graph, profiler=profiler, outdir=profiler_outdir)


def trace_off() -> None:
    """Stop recording and forget what was recorded."""
    from tapeflow.graph import function

    if _observe in function.trace_observers:
        function.trace_observers.remove(_observe)
    _recorded.clear()
    _options["on"] = False


def trace_export(name: str, step: Any = None, profiler_outdir: str | None = None) -> None:
    """Write what was recorded to the default writer: each graph (``Event.graph_def``) and,
    with the profiler on, its run metadata tagged `name`; then stop recording."""
    from tapeflow.summary import graph_def, run_metadata

    target = writer.default_writer()
    if target is None:
        raise ValueError("trace_export: no default summary writer (use "
                         "`with writer.as_default():`)")
    event_pb2 = _tb.proto("event_pb2")
    at = writer.resolve_step(step)
    for i, (concrete, arrays) in enumerate(list(_recorded)):
        if _options["graph"]:
            proto = graph_def.as_graph_def(concrete)
            target.add_event(event_pb2.Event(step=at, graph_def=proto.SerializeToString()))
        if _options["profiler"]:
            meta = run_metadata.run_metadata(concrete, arrays)
            tag = name if i == 0 else f"{name}_{i}"
            tagged = event_pb2.TaggedRunMetadata(tag=tag, run_metadata=meta.SerializeToString())
            target.add_event(event_pb2.Event(step=at, tagged_run_metadata=tagged))
            outdir = profiler_outdir or _options.get("outdir")
            if outdir:
                from tapeflow.summary import profiler

                profiler.write_trace(outdir, profiler.node_events(concrete, arrays))
    target.flush()
    trace_off()
