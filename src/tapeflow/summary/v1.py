"""``tf.compat.v1.summary``: ``FileWriter(logdir, graph)``, ``scalar``/``histogram`` summary
ops in TF1 graphs, ``merge_all`` / ``merge``.

In a TF1 graph, ``scalar(name, tensor)`` adds a node whose value (when a Session runs it) is a
serialized ``Summary`` proto, and registers it in the ``summaries`` collection; ``merge_all``
joins them; ``FileWriter.add_summary(bytes, step)`` writes the result, as in TensorFlow 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.summary import _tb
from tapeflow.summary.writer import SummaryWriter

SUMMARIES = "summaries"


class FileWriter:
    """TF1's event-file writer; with a graph, the graph is written at once."""

    def __init__(self, logdir: str, graph: Any = None, max_queue: int = 10,
                 flush_secs: int = 120, graph_def: Any = None, filename_suffix: str | None = None,
                 session: Any = None) -> None:
        self._writer = SummaryWriter(logdir, max_queue, int(flush_secs * 1000),
                                     filename_suffix or "")
        self.logdir = self._writer.logdir
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self.logdir

    def add_graph(self, graph: Any, global_step: int | None = None, graph_def: Any = None
                  ) -> None:
        from tapeflow.summary import graph_def as graph_def_lib

        event_pb2 = _tb.proto("event_pb2")
        proto = graph_def_lib.as_graph_def(graph_def if graph_def is not None else graph)
        self._writer.add_event(event_pb2.Event(step=int(global_step or 0),
                                               graph_def=proto.SerializeToString()))

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """A Summary proto or its serialized bytes (what a Session returns for a summary op)."""
        summary_pb2 = _tb.proto("summary_pb2")
        if not hasattr(summary, "SerializeToString"):
            summary = summary_pb2.Summary.FromString(_as_bytes(summary))
        self._writer.add_summary(summary, int(global_step or 0))

    def add_run_metadata(self, run_metadata: Any, tag: str, global_step: int | None = None
                         ) -> None:
        event_pb2 = _tb.proto("event_pb2")
        tagged = event_pb2.TaggedRunMetadata(tag=tag, run_metadata=run_metadata
                                             .SerializeToString())
        self._writer.add_event(event_pb2.Event(step=int(global_step or 0),
                                               tagged_run_metadata=tagged))

    def add_event(self, event: Any) -> None:
        self._writer.add_event(event)

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _as_bytes(value: Any) -> bytes:
    """Serialized bytes from a Session result or a string array (kept as objects: a fixed
    width NumPy bytes array would drop trailing zero bytes)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return bytes(np.asarray(value, dtype=object).item())


def _summary_node(name: str, make: Any, inputs: list, collections: Any) -> Any:
    import tapeflow as tf

    def run(*values: np.ndarray) -> np.ndarray:
        return np.asarray(make(*values).SerializeToString(), dtype=object)

    out = tf.numpy_function(run, inputs, tf.string, name=name)
    _collect(out, collections)
    return out


def _collect(tensor: Any, collections: Any) -> None:
    from tapeflow.compat import v1 as compat_v1

    for key in (collections if collections is not None else [SUMMARIES]):
        compat_v1.add_to_collection(key, tensor)


def scalar(name: str, tensor: Any, collections: Any = None, family: Any = None) -> Any:
    """A node whose value is the serialized Summary of scalar `tensor`."""
    summary_pb2 = _tb.proto("summary_pb2")
    return _summary_node(name, lambda v: summary_pb2.Summary(value=[
        summary_pb2.Summary.Value(tag=name, simple_value=float(v))]), [tensor], collections)


def histogram(name: str, values: Any, collections: Any = None, family: Any = None) -> Any:
    summary_v2 = _tb.module("plugins.histogram.summary_v2")
    return _summary_node(name, lambda v: summary_v2.histogram_pb(name, np.asarray(
        v, dtype=np.float64)), [values], collections)


def merge(inputs: list, collections: Any = None, name: str | None = None) -> Any:
    """One node whose value joins the serialized Summaries of `inputs`."""
    summary_pb2 = _tb.proto("summary_pb2")

    def make(*parts: np.ndarray) -> Any:
        merged = summary_pb2.Summary()
        for part in parts:
            merged.MergeFromString(_as_bytes(part))
        return merged

    return _summary_node(name or "Merge/MergeSummary", make, list(inputs),
                         collections if collections is not None else [])


def merge_all(key: str = SUMMARIES, scope: str | None = None, name: str | None = None) -> Any:
    """All summary nodes of the default graph merged (None when there are none)."""
    from tapeflow.compat import v1 as compat_v1

    found = compat_v1.get_collection(key, scope)
    return merge(found, name=name) if found else None
