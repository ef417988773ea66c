"""``tf.summary.scalar`` / ``histogram`` / ``image`` / ``text`` / ``audio`` / ``write`` /
``graph``.

Values become the ``Summary`` protos TensorBoard's own plugins define (their ``*_pb`` helpers
and plugin metadata), written through the default writer at the given or default step.
Called inside a ``tf.function``, a summary becomes a stateful ``numpy_function`` node that
writes each time the graph runs, as TensorFlow's summary ops do.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from tapeflow.summary import _tb, writer


def _value(x: Any) -> np.ndarray:
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def _is_symbolic(*values: Any) -> bool:
    from tapeflow.graph.ir import SymbolicTensor

    return any(isinstance(v, SymbolicTensor) for v in values)


def _write(name: str, step: Any, make: Any, data: Any) -> Any:
    """Write ``make(data)`` (a Summary proto) now, or when the traced graph runs."""
    if not writer.should_record_summaries():
        return False
    if _is_symbolic(data, step):
        return _write_in_graph(name, step, make, data)
    writer.default_writer().add_summary(make(_value(data)), writer.resolve_step(step))
    return True


def _write_in_graph(name: str, step: Any, make: Any, data: Any) -> Any:
    import tapeflow as tf

    target = writer.default_writer()
    step = writer.get_step() if step is None else step
    if step is None:
        writer.resolve_step(None)  # raises the "No step set" error

    def run(value: np.ndarray, at: np.ndarray) -> np.ndarray:
        target.add_summary(make(np.asarray(value)), int(at))
        return np.asarray(True)

    if isinstance(step, tf.Variable) or _is_symbolic(step):  # read when the graph runs
        step_tensor = tf.cast(step, tf.int64)
    else:
        step_tensor = tf.convert_to_tensor(_value(step), tf.int64)
    return tf.numpy_function(run, [data, step_tensor], tf.bool, name=f"{name}_summary")


def scalar(name: str, data: Any, step: Any = None, description: str | None = None) -> Any:
    """A scalar (loss, accuracy...) for the Scalars dashboard."""
    summary_v2 = _tb.module("plugins.scalar.summary_v2")
    return _write(name, step, lambda v: summary_v2.scalar_pb(name, float(v), description),
                  data)


def histogram(name: str, data: Any, step: Any = None, buckets: int | None = None,
              description: str | None = None) -> Any:
    """The distribution of `data`'s values, for the Histograms and Distributions dashboards."""
    summary_v2 = _tb.module("plugins.histogram.summary_v2")
    count = buckets if buckets is not None else summary_v2.DEFAULT_BUCKET_COUNT
    return _write(name, step, lambda v: summary_v2.histogram_pb(
        name, np.asarray(v, dtype=np.float64), count, description), data)


def text(name: str, data: Any, step: Any = None, description: str | None = None) -> Any:
    """Markdown text for the Text dashboard."""
    summary_v2 = _tb.module("plugins.text.summary_v2")

    def make(v: np.ndarray) -> Any:
        v = np.vectorize(lambda s: s.decode("utf8") if isinstance(s, bytes) else str(s),
                         otypes=[object])(v) if v.ndim else np.asarray(
            v.item().decode("utf8") if isinstance(v.item(), bytes) else str(v.item()))
        return summary_v2.text_pb(name, v.tolist() if v.ndim else str(v), description)

    return _write(name, step, make, data)


def _png(image: np.ndarray) -> bytes:
    from PIL import Image

    if image.shape[-1] == 1:
        image = image[..., 0]
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


def image_summary(name: str, images: np.ndarray, max_outputs: int = 3,
                  description: str | None = None) -> Any:
    """The image plugin's proto: [width, height, png...] strings with its metadata."""
    metadata = _tb.module("plugins.image.metadata")
    summary_pb2 = _tb.proto("summary_pb2")
    tensor_util = _tb.module("util.tensor_util")
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
        raise ValueError(f"tf.summary.image {name!r}: expected images of shape [k, h, w, c] "
                         f"with c in (1, 3, 4), got {images.shape}")
    if images.dtype != np.uint8:
        images = np.clip(np.asarray(images, dtype=np.float64) * 255.0 + 0.5, 0, 255)
        images = images.astype(np.uint8)
    pngs = [_png(img) for img in images[:max_outputs]]
    dims = [str(images.shape[2]).encode(), str(images.shape[1]).encode()]
    tensor = tensor_util.make_tensor_proto(np.array(dims + pngs, dtype=object))
    meta = metadata.create_summary_metadata(display_name=name, description=description or "")
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=name, metadata=meta,
                                                                tensor=tensor)])


def image(name: str, data: Any, step: Any = None, max_outputs: int = 3,
          description: str | None = None) -> Any:
    """Images ([k, h, w, c], floats in [0, 1] or uint8) for the Images dashboard."""
    return _write(name, step, lambda v: image_summary(name, v, max_outputs, description), data)


def audio(name: str, data: Any, sample_rate: Any, step: Any = None, max_outputs: int = 3,
          encoding: str | None = None, description: str | None = None) -> Any:
    """Clips ([k, frames, channels], floats in [-1, 1]) as 16-bit WAV for the Audio dashboard:
    the plugin's [k, 2] tensor of (encoded clip, label) rows."""
    if encoding not in (None, "wav"):
        raise ValueError(f"tf.summary.audio {name!r}: unknown encoding {encoding!r} (only "
                         f"'wav')")
    rate = int(_value(sample_rate))
    if rate <= 0:
        raise ValueError(f"tf.summary.audio {name!r}: sample_rate must be positive, got {rate}")

    def make(clips: np.ndarray) -> Any:
        from tapeflow.audio import encode_wav

        if clips.ndim != 3:
            raise ValueError(f"tf.summary.audio {name!r}: expected audio of shape [k, frames, "
                             f"channels], got {clips.shape}")
        metadata = _tb.module("plugins.audio.metadata")
        rows = [[encode_wav(clip, rate).numpy(), b""] for clip in clips[:max_outputs]]
        meta = metadata.create_summary_metadata(
            display_name=None, description=description or "",
            encoding=metadata.Encoding.Value("WAV"))
        return _tensor_summary(name, np.array(rows, dtype=object).reshape(-1, 2), meta)

    return _write(name, step, make, data)


def write(tag: str, tensor: Any, step: Any = None, metadata: Any = None,
          name: str | None = None) -> Any:
    """Any tensor under `tag` with the given ``SummaryMetadata`` (a proto or its bytes): the
    generic summary the plugins' own ops are built on."""
    summary_pb2 = _tb.proto("summary_pb2")
    if isinstance(metadata, (bytes, bytearray)):
        metadata = summary_pb2.SummaryMetadata.FromString(bytes(metadata))
    elif metadata is not None and not isinstance(metadata, summary_pb2.SummaryMetadata):
        raise TypeError(f"tf.summary.write {tag!r}: metadata must be a SummaryMetadata proto or "
                        f"its serialized bytes, got {type(metadata).__name__}")
    return _write(tag, step, lambda v: _tensor_summary(tag, v, metadata), tensor)


def _tensor_summary(tag: str, value: np.ndarray, metadata: Any) -> Any:
    summary_pb2 = _tb.proto("summary_pb2")
    tensor = _tb.module("util.tensor_util").make_tensor_proto(value)
    entry = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if metadata is not None:
        entry.metadata.CopyFrom(metadata)
    return summary_pb2.Summary(value=[entry])


def graph(graph_data: Any) -> bool:
    """Write a graph (a tapeflow Graph, ConcreteFunction or GraphDef) for the Graphs
    dashboard; TensorFlow's op names and attributes (see `graph_def`)."""
    from tapeflow.summary import graph_def

    target = writer.default_writer()
    if target is None or not writer.should_record_summaries():
        return False
    event_pb2 = _tb.proto("event_pb2")
    proto = graph_def.as_graph_def(graph_data)
    target.add_event(event_pb2.Event(graph_def=proto.SerializeToString()))
    return True
