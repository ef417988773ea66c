"""``tf.profiler.experimental``: start/stop/Trace writing a Chrome trace for TensorBoard's
profile plugin and Perfetto (implemented in `tapeflow.summary.profiler`)."""

import types as _types

from tapeflow.summary import profiler as _profiler

experimental = _types.ModuleType("tapeflow.profiler.experimental",
                                 "tf.profiler.experimental: start, stop, Trace.")
experimental.start = _profiler.start
experimental.stop = _profiler.stop
experimental.Trace = _profiler.Trace
experimental.ProfilerOptions = _profiler.ProfilerOptions

__all__ = ["experimental"]
