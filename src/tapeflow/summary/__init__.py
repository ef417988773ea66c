"""``tf.summary``: TensorBoard event files written with the tensorboard package's protos.

See docs/tensorboard.md. ``tf.summary.create_file_writer(logdir)`` and ``as_default()``,
``scalar``/``histogram``/``image``/``text``/``audio``/``write``/``graph``,
``trace_on``/``trace_export`` (graphs plus per-node compute time and memory), ``record_if``,
``experimental.set_step``, ``flush``.
"""

import types as _types

from tapeflow.summary import introspection as _introspection
from tapeflow.summary.summary_ops import audio, graph, histogram, image, scalar, text, write
from tapeflow.summary.trace import trace_export, trace_off, trace_on
from tapeflow.summary.writer import (
    SummaryWriter,
    create_file_writer,
    create_noop_writer,
    flush,
    record_if,
    should_record_summaries,
)
from tapeflow.summary.writer import get_step as _get_step
from tapeflow.summary.writer import set_step as _set_step

_introspection.install()  # graph.as_graph_def(), Operation.node_def, function_def ...

experimental = _types.ModuleType("tapeflow.summary.experimental",
                                 "tf.summary.experimental: the default step.")
experimental.set_step = _set_step
experimental.get_step = _get_step

__all__ = ["SummaryWriter", "audio", "create_file_writer", "create_noop_writer", "experimental",
           "flush", "graph", "histogram", "image", "record_if", "scalar",
           "should_record_summaries", "text", "trace_export", "trace_off", "trace_on", "write"]
