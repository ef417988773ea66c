"""The Graphs dashboard, in headless Chromium, draws the graphs tapeflow writes: seed 003's
Const/Const_1/Add and the DenseNet train step (skipped without Debian's chromium)."""

import os

import numpy as np
import pytest

import tapeflow as tf

pytest.importorskip("tensorboard")
from browser import chromium, graph_labels  # noqa: E402
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
