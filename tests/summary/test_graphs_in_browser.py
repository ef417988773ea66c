"""The Graphs dashboard, in headless Chromium, draws the graphs tapeflow writes: seed 003's
Const/Const_1/Add and the DenseNet train step, and colours nodes by the run metadata's compute
time and memory (skipped without Debian's chromium)."""

import os

import numpy as np
import pytest

import tapeflow as tf

pytest.importorskip("tensorboard")
from browser import chromium, coloured_nodes, graph_labels  # noqa: E402
from tb_server import tensorboard  # noqa: E402

pytestmark = pytest.mark.skipif(chromium() is None, reason="needs chromium (apt-get install "
                                                            "chromium)")
SHOTS = os.environ.get("TAPEFLOW_SCREENSHOTS")  # keep the screenshots there when set


def _shot(tmp_path, name):
    directory = SHOTS or str(tmp_path)
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, name)


def test_seed_003_graph_renders(tmp_path):
    tf1 = tf.compat.v1
    with tf1.Graph().as_default() as g:
        tf.add(tf.constant(2), tf.constant(3))
        tf1.summary.FileWriter(str(tmp_path / "logs" / "graphs"), g).close()
    with tensorboard(tmp_path / "logs") as tb:
        tb.wait_for("/data/runs", lambda runs: "graphs" in runs)
        labels = graph_labels(tb.url, "graphs", _shot(tmp_path, "seed003_graph.png"))
    assert {"Const", "Const_1", "Add"} <= set(labels), labels


@pytest.mark.slow
def test_densenet_train_step_graph_renders(tmp_path):
    from tapeflow.models import DenseNet

    model = DenseNet(input_shape=(12, 12, 1), num_blocks=2, layers_per_block=2)
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.RandomState(0).rand(8, 12, 12, 1).astype("float32")
    board = tf.keras.callbacks.TensorBoard(str(tmp_path / "logs"))
    model.fit(x, np.arange(8) % 10, batch_size=4, epochs=1, verbose=0, callbacks=[board])
    with tensorboard(tmp_path / "logs") as tb:
        tb.wait_for("/data/plugin/graphs/info", lambda info: "train" in info)
        labels = graph_labels(tb.url, "train", _shot(tmp_path, "densenet_step_graph.png"))
    assert model.name in labels, labels  # the model's name scope, drawn as a group
    assert len(labels) >= 5, labels


# the dashboard's colour ramp for compute time and memory (least to most)
LOW, HIGH = (255, 245, 240), (251, 106, 74)


def _rgb(fill):
    return tuple(int(v) for v in fill[4:-1].split(",")) if fill.startswith("rgb(") else None


def _ramp(fills):
    """The fills on the ramp between LOW and HIGH (hatched and structure fills left out)."""
    out = []
    for label, fill in fills:
        rgb = _rgb(fill or "")
        if rgb is not None and all(min(a, b) <= c <= max(a, b) for a, b, c in zip(LOW, HIGH, rgb)):
            out.append((label, rgb))
    return out


def test_memory_colouring_from_run_metadata(tmp_path):
    """trace_export's RunMetadata: the Graphs dashboard colours the scope holding the biggest
    outputs with the ramp's top colour, and a scope of tiny outputs near its bottom."""

    @tf.function
    def step(x):
        with tf.name_scope("small"):
            a = tf.reduce_sum(x, axis=1)
        with tf.name_scope("big"):
            b = tf.tile(x, [1, 8])
        return a, b

    writer = tf.summary.create_file_writer(str(tmp_path / "logs" / "run"))
    tf.summary.trace_on(graph=True, profiler=True)
    step(np.ones((64, 64), np.float32))
    with writer.as_default():
        tf.summary.trace_export("step", step=0)
    writer.close()
    with tensorboard(tmp_path / "logs") as tb:
        tb.wait_for("/data/plugin/graphs/info", lambda info: "run" in info)
        report = coloured_nodes(tb.url, "run", "step", "memory",
                                _shot(tmp_path, "memory_colouring.png"))
    assert report.get("stats"), report
    colours = dict(_ramp(report["fills"]))
    assert colours["big"] == HIGH, report["fills"]
    assert colours["small"][1] > 235, report["fills"]  # 256 bytes of 128 KB: near the bottom


def _shaded_pixels(path):
    """Pixels of the screenshot's graph area (right of the sidebar, below the header) drawn
    in the ramp's colours, clearly above its bottom (the structure colouring draws none)."""
    from PIL import Image

    image = np.asarray(Image.open(path).convert("RGB"), dtype=np.int16)[80:, 360:]
    low, high = np.minimum(LOW, HIGH) - 3, np.maximum(LOW, HIGH) + 3
    on_ramp = np.all((image >= low) & (image <= high), axis=-1)
    return int((on_ramp & (image[..., 1] <= 235)).sum())


@pytest.mark.slow
def test_densenet_train_step_compute_time_and_memory_colouring(tmp_path):
    """`profile_batch` writes the real step's RunMetadata; the dashboard colours the DenseNet
    train step by compute time and by memory: many shades of the ramp among the nodes, and
    on screen (the screenshots' pixels)."""
    from tapeflow.models import DenseNet

    model = DenseNet(input_shape=(12, 12, 1), num_blocks=2, layers_per_block=2)
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.RandomState(0).rand(8, 12, 12, 1).astype("float32")
    board = tf.keras.callbacks.TensorBoard(str(tmp_path / "logs"), profile_batch=2)
    model.fit(x, np.arange(8) % 10, batch_size=4, epochs=1, verbose=0, callbacks=[board])
    with tensorboard(tmp_path / "logs") as tb:
        tb.wait_for("/data/plugin/graphs/info",
                    lambda info: "batch_2" in info.get("train", {}).get("tags", {}))
        for mode in ("compute_time", "memory"):
            shot = _shot(tmp_path, f"densenet_step_{mode}.png")
            report = coloured_nodes(tb.url, "train", "batch_2", mode, shot)
            assert report.get("stats"), report
            shades = {rgb for _, rgb in _ramp(report["fills"])}
            assert HIGH in shades and len(shades) >= 5, (mode, report["fills"])
            assert _shaded_pixels(shot) > 100, mode
