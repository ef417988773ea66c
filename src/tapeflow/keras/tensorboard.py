"""``tf.keras.callbacks.TensorBoard``: training curves, graphs, weights, embeddings, profiles.

Keras 2's layout: ``log_dir/train`` gets ``epoch_<metric>`` at step = epoch (and
``batch_<metric>`` every `update_freq` batches at step = batches seen), ``log_dir/validation``
the ``val_`` logs without their prefix. ``write_graph`` writes the traced train step (its
name scopes become collapsible groups) and the Keras model config (the conceptual graph);
``histogram_freq`` weight histograms (``dense/kernel_0``), with ``write_images`` the 2-D and
convolution kernels as images; ``embeddings_freq`` each Embedding layer's matrix as a TSV for
the projector (``projector_config.pbtxt``; ``embeddings_metadata`` label files are copied
next to it, where TensorBoard looks for them);
``profile_batch`` a Chrome trace of those batches under ``log_dir/train/plugins/profile`` (one
span per step and, on an executor track, the step graph's nodes timed in the real steps) and
their RunMetadata (``batch_<n>``: the Graphs dashboard's compute time and memory colouring).
Everything goes through `tapeflow.summary` (the tensorboard package's protos and writer).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

import numpy as np

from tapeflow.keras.callbacks import Callback


def _summary() -> Any:
    from tapeflow import summary
    from tapeflow.summary import _tb

    _tb.module("summary.writer.event_file_writer")  # fails early, naming the extra
    return summary


def _profile_range(profile_batch: Any) -> tuple[int, int]:
    if isinstance(profile_batch, str):
        profile_batch = [int(p) for p in profile_batch.split(",")]
    if isinstance(profile_batch, (list, tuple)):
        start, stop = (list(profile_batch) + list(profile_batch))[:2]
    else:
        start = stop = profile_batch
    if not (isinstance(start, int) and isinstance(stop, int) and 0 <= start <= stop):
        raise ValueError(f"TensorBoard: profile_batch must be a non-negative integer or a pair "
                         f"(start, stop) with start <= stop, got {profile_batch!r}")
    return start, stop


class TensorBoard(Callback):
    """Write what ``fit`` does as TensorBoard event files (see the module docstring)."""

    def __init__(self, log_dir: str | os.PathLike = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, write_images: bool = False,
                 write_steps_per_second: bool = False, update_freq: str | int = "epoch",
                 profile_batch: Any = 0, embeddings_freq: int = 0,
                 embeddings_metadata: Any = None, **kwargs: Any) -> None:
        super().__init__()
        self._summary = _summary()
        if update_freq not in ("epoch", "batch") and not (
                isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             f"int, got {update_freq!r}")
        for name, value in (("histogram_freq", histogram_freq),
                            ("embeddings_freq", embeddings_freq)):
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"TensorBoard: {name} must be a non-negative int, got {value!r}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._profile_start, self._profile_stop = _profile_range(profile_batch)
        self._writers: dict[str, Any] = {}
        self._batches_seen = 0
        self._epoch_start = 0.0
        self._epoch_batches = 0
        self._graph_written = False
        self._profiling = False
        self._timed: list = []  # (concrete, per-node stats, calls) of instrumented steps
        self._before: dict = {}

    @property
    def _train_dir(self) -> str:
        return os.path.join(self.log_dir, "train")

    def _writer(self, name: str) -> Any:
        if name not in self._writers:
            self._writers[name] = self._summary.create_file_writer(
                os.path.join(self.log_dir, name))
        return self._writers[name]

    def _write(self, name: str, prefix: str, logs: dict, step: int) -> None:
        with self._writer(name).as_default(step=step):
            for k, v in logs.items():
                if np.ndim(v) == 0:
                    self._summary.scalar(f"{prefix}{k}", float(v))

    # --- callback hooks -------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        self._writer("train")
        self._graph_written = not self.write_graph
        if self.write_graph:
            self._write_keras_model()
        if self.embeddings_freq:
            self._write_projector_config()

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch_start = time.time()
        self._epoch_batches = 0

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        if self._profile_stop and self._batches_seen + 1 == self._profile_start:
            self._start_profiling()
        from tapeflow.summary import profiler

        if profiler.active():
            self._span = profiler.Trace("train", step_num=self._batches_seen + 1)
            self._span.__enter__()
        if self._profiling:  # per-node totals so far, to tell this batch's share
            self._instrument_steps()
            self._before = {id(c): {n: s[0] for n, s in stats.items()}
                            for c, stats, _ in self._timed}

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._batches_seen += 1
        self._epoch_batches += 1
        if getattr(self, "_span", None) is not None:
            if self._profiling:
                self._profile_step(self._batches_seen, self._span._start)
            self._span.__exit__(None, None, None)
            self._span = None
        if not self._graph_written:
            self._write_train_graph()
        if self.update_freq != "epoch" and self._batches_seen % self.update_freq == 0:
            self._write("train", "batch_", logs or {}, self._batches_seen)
        if self._profiling and self._batches_seen >= self._profile_stop:
            self._stop_profiling()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        if self.write_steps_per_second:
            train["steps_per_second"] = self._epoch_batches / max(
                time.time() - self._epoch_start, 1e-9)
        self._write("train", "epoch_", train, epoch)
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if val:
            self._write("validation", "epoch_", val, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_weights(epoch)
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            self._write_embeddings(epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._profiling:
            self._stop_profiling()
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    # --- graphs ---------------------------------------------------------------------------
    def _write_keras_model(self) -> None:
        """The model's Keras config, which the Graphs dashboard draws as the conceptual graph."""
        from tapeflow.summary import _tb

        try:
            config = self.model.to_json()
        except (NotImplementedError, TypeError, ValueError):
            return  # a subclassed model without get_config: the op graph is still written
        summary_pb2 = _tb.proto("summary_pb2")
        tensor_util = _tb.module("util.tensor_util")
        metadata = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name="graph_keras_model", content=b"1"))
        value = summary_pb2.Summary.Value(tag="keras", metadata=metadata,
                                          tensor=tensor_util.make_tensor_proto(
                                              np.array(config.encode(), dtype=object)))
        self._writer("train").add_summary(summary_pb2.Summary(value=[value]), 0)

    def _write_train_graph(self) -> None:
        fn = getattr(self.model, "_train_fn", None)
        concretes = getattr(fn, "_concretes", None)
        self._graph_written = True
        if concretes:
            with self._writer("train").as_default(step=0):
                self._summary.graph(concretes[0])

    # --- weights and embeddings -----------------------------------------------------------
    def _write_weights(self, epoch: int) -> None:
        with self._writer("train").as_default(step=epoch):
            for layer in self.model.layers:
                for weight in layer.weights:
                    name = weight.name.replace(":", "_")
                    value = weight.numpy()
                    self._summary.histogram(name, value)
                    if self.write_images:
                        image = _as_image(value)
                        if image is not None:
                            self._summary.image(f"{name}/image", image)

    def _embedding_layers(self) -> list:
        from tapeflow.keras.layers import Embedding

        return [layer for layer in self.model._flatten_layers(include_self=False)
                if isinstance(layer, Embedding)]

    def _write_projector_config(self) -> None:
        from google.protobuf import text_format

        from tapeflow.summary import _tb

        projector = _tb.module("plugins.projector.projector_config_pb2")
        config = projector.ProjectorConfig()
        metadata = self.embeddings_metadata
        for i, layer in enumerate(self._embedding_layers()):
            info = config.embeddings.add(tensor_name=f"{layer.name}/embeddings",
                                         tensor_path=f"{layer.name}.embeddings.tsv")
            path = metadata.get(layer.name) if isinstance(metadata, dict) else (
                metadata if i == 0 else None)
            if path:
                info.metadata_path = self._metadata_file(layer.name, os.fspath(path))
        os.makedirs(self._train_dir, exist_ok=True)
        with open(os.path.join(self._train_dir, "projector_config.pbtxt"), "w") as f:
            f.write(text_format.MessageToString(config))

    def _metadata_file(self, layer_name: str, path: str) -> str:
        """TensorBoard reads label files only from inside the run's directory: an existing
        file is copied there; any other name is kept, relative to it."""
        if not os.path.isfile(path):
            return path
        name = f"{layer_name}.metadata.tsv"
        os.makedirs(self._train_dir, exist_ok=True)
        shutil.copyfile(path, os.path.join(self._train_dir, name))
        return name

    def _write_embeddings(self, epoch: int) -> None:
        for layer in self._embedding_layers():
            path = os.path.join(self._train_dir, f"{layer.name}.embeddings.tsv")
            tmp = path + ".tmp"
            np.savetxt(tmp, layer.embeddings.numpy(), delimiter="\t", fmt="%.8g")
            os.replace(tmp, path)

    # --- profiling ------------------------------------------------------------------------
    def _train_concretes(self) -> list:
        return list(getattr(getattr(self.model, "_train_fn", None), "_concretes", None) or [])

    def _start_profiling(self) -> None:
        """From the first profiled batch on, the traced train steps run on instrumented code:
        each node of the real steps is timed on the real batches. A step traced while
        profiling is profiled by the profiler on the batch that traced it."""
        from tapeflow.summary import profiler

        profiler.start(self._train_dir)
        self._profiling = True

    def _instrument_steps(self) -> None:
        """Instrument the train step's traces not instrumented yet."""
        done = {id(c) for c, _, _ in self._timed}
        for concrete in self._train_concretes():
            if id(concrete) not in done:
                stats: dict = {}
                calls: list = []
                concrete.instrument(stats, calls)
                self._timed.append((concrete, stats, calls))

    def _profile_step(self, step: int, start_us: float) -> None:
        """The nodes of the train step that ran in batch `step`: executor-track events from
        the batch's start and, for the Graphs dashboard, RunMetadata tagged ``batch_<step>``
        (compute time and memory per node)."""
        from tapeflow.summary import _tb, profiler, run_metadata

        for concrete, stats, calls in self._timed:
            before = self._before.get(id(concrete), {})
            times = {node: s[0] - before.get(node, 0.0) for node, s in stats.items()}
            if not calls or not any(t > 0 for t in times.values()):
                continue  # this trace did not run in the batch
            profiler.add_events(profiler.timed_node_events(concrete, times, start_us))
            meta = run_metadata.timed_run_metadata(concrete.graph, times, time.time(),
                                                   calls[-1][1])
            event_pb2 = _tb.proto("event_pb2")
            tagged = event_pb2.TaggedRunMetadata(tag=f"batch_{step}",
                                                 run_metadata=meta.SerializeToString())
            self._writer("train").add_event(event_pb2.Event(step=step,
                                                            tagged_run_metadata=tagged))

    def _stop_profiling(self) -> None:
        from tapeflow.summary import profiler

        self._profiling = False
        for concrete, _, _ in self._timed:
            concrete.instrument(None)
        self._timed = []
        profiler.stop()


def _as_image(value: np.ndarray) -> np.ndarray | None:
    """A 2-D weight as one grey image, a conv kernel [h, w, in, out] as `out` images;
    values scaled to [0, 1]."""
    if value.ndim == 1:
        value = value[None, :]
    if value.ndim == 2:
        images = value[None, :, :, None]
    elif value.ndim == 4:
        images = np.transpose(value.reshape(value.shape[0], value.shape[1], -1), (2, 0, 1))
        images = images[..., None][: 3]
    else:
        return None
    low, high = float(images.min()), float(images.max())
    return (images - low) / (high - low) if high > low else np.zeros_like(images)
