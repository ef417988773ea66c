"""TensorBoard callback: event files that TensorBoard's own reader loads (scalars, graphs,
weight histograms and images, embeddings for the projector, a profile of chosen batches)."""

import glob
import os
import sys

import numpy as np
import pytest

from tapeflow import keras
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _events(run_dir):
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    (path,) = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    return list(LegacyEventFileLoader(path).Load())


def _scalars(run_dir):
    from tensorboard.util import tensor_util

    out = {}
    for event in _events(run_dir):
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name in ("scalars", ""):
                out.setdefault(value.tag, []).append(
                    (event.step, float(tensor_util.make_ndarray(value.tensor))))
    return out


def test_fit_writes_epoch_and_batch_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [2.0]], np.float32)
    model = keras.Sequential([layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    board = keras.callbacks.TensorBoard(tmp_path, update_freq=2)
    history = model.fit(x, y, batch_size=5, epochs=3, validation_split=0.25, verbose=0,
                        callbacks=[board])

    train, val = _scalars(tmp_path / "train"), _scalars(tmp_path / "validation")
    for name in ("loss", "mae"):
        steps, values = zip(*train[f"epoch_{name}"])
        assert steps == (0, 1, 2)
        np.testing.assert_allclose(values, history.history[name], rtol=1e-6)
        steps, values = zip(*val[f"epoch_{name}"])
        np.testing.assert_allclose(values, history.history[f"val_{name}"], rtol=1e-6)
    # 3 batches per epoch, 9 in all: a batch summary after batches 2, 4, 6, 8
    assert [step for step, _ in train["batch_loss"]] == [2, 4, 6, 8]


def test_bad_options_are_clear(tmp_path):
    pytest.importorskip("tensorboard")
    with pytest.raises(ValueError, match="update_freq"):
        keras.callbacks.TensorBoard(tmp_path, update_freq="sometimes")
    with pytest.raises(ValueError, match="profile_batch"):
        keras.callbacks.TensorBoard(tmp_path, profile_batch=(3, 1))


def test_graph_histograms_images_embeddings_and_profile(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import graph_pb2

    model = keras.Sequential([layers.Embedding(10, 3, input_length=4), layers.Flatten(),
                              layers.Dense(4, activation="relu"), layers.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 10, (12, 4)), rng.integers(0, 2, 12)
    board = keras.callbacks.TensorBoard(tmp_path, histogram_freq=2, write_images=True,
                                        embeddings_freq=1, profile_batch=(2, 3))
    model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[board])

    events = _events(tmp_path / "train")
    (graph,) = [graph_pb2.GraphDef.FromString(e.graph_def) for e in events if e.graph_def]
    names = {n.name for n in graph.node}
    products = {n.name: n.op for n in graph.node if n.name.startswith("sequential/dense/")
                and n.op in ("MatMul", "_FusedMatMul")}  # the step as optimized: bias fused
    assert products and "dense/kernel" in names
    tags = {}
    for e in events:
        for v in e.summary.value:
            tags.setdefault(v.tag, []).append((e.step, v.metadata.plugin_data.plugin_name))
    assert tags["dense/kernel_0"] == [(0, "histograms"), (2, "histograms")]
    assert tags["dense/kernel_0/image"] == [(0, "images"), (2, "images")]
    assert tags["keras"] == [(0, "graph_keras_model")]

    config = (tmp_path / "train" / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "embedding/embeddings"' in config
    table = np.loadtxt(tmp_path / "train" / "embedding.embeddings.tsv", delimiter="\t")
    np.testing.assert_allclose(table, model.layers[0].embeddings.numpy(), rtol=1e-6)

    import gzip
    import json

    (trace,) = glob.glob(str(tmp_path / "train" / "plugins" / "profile" / "*" / "*.json.gz"))
    events = json.load(gzip.open(trace))["traceEvents"]
    steps = [e["args"]["step_num"] for e in events if e["name"] == "train"]
    assert steps == ["2", "3"]
    assert any(e.get("cat") == "op" and e["name"] == "MatMul" for e in events)


def test_profile_batch_times_the_real_steps(tmp_path):
    """The profiled batches run the train step on instrumented code: its nodes' times fall
    inside those steps' spans, the steps train as usual, and each profiled batch gets
    RunMetadata (compute time and memory per node of the step graph) for the Graphs
    dashboard, with the real batch's sizes."""
    pytest.importorskip("tensorboard")
    import gzip
    import json

    from tensorboard.compat.proto import config_pb2, graph_pb2

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(12, 3)).astype(np.float32), rng.integers(0, 2, 12)

    def model():
        m = keras.Sequential([layers.Dense(4, activation="relu", input_shape=(3,)),
                              layers.Dense(2)])
        m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    plain, profiled = model(), model()
    profiled.set_weights(plain.get_weights())
    plain.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    board = keras.callbacks.TensorBoard(tmp_path, profile_batch=(2, 3))
    profiled.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[board])
    for a, b in zip(plain.get_weights(), profiled.get_weights()):
        np.testing.assert_array_equal(a, b)

    (trace,) = glob.glob(str(tmp_path / "train" / "plugins" / "profile" / "*" / "*.json.gz"))
    events = json.load(gzip.open(trace))["traceEvents"]
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "train"]
    ops = [e for e in events if e.get("cat") == "op"]
    ran = {e["name"] for e in ops}  # the optimized step: Dense's bias and ReLU fused in,
    # the variables' Adam updates grouped into one node (graph/passes/group_updates)
    assert len(spans) == 2 and "KerasApplyAdamGroup" in ran and ran & {"MatMul", "_FusedMatMul"}
    for e in ops:  # timed in the real steps, not replayed afterwards
        assert any(lo <= e["ts"] and e["ts"] + e["dur"] <= hi + 1 for lo, hi in spans), e

    written = _events(tmp_path / "train")
    (graph,) = [graph_pb2.GraphDef.FromString(e.graph_def) for e in written if e.graph_def]
    tagged = [e.tagged_run_metadata for e in written if e.HasField("tagged_run_metadata")]
    assert [t.tag for t in tagged] == ["batch_2", "batch_3"]
    for t in tagged:
        stats = config_pb2.RunMetadata.FromString(t.run_metadata).step_stats.dev_stats[0]
        by_name = {s.node_name: s for s in stats.node_stats}
        assert set(by_name) <= {n.name for n in graph.node}
        scope = f"{profiled.name}/{profiled.layers[0].name}/"  # MatMul, or with bias and ReLU
        (matmul,) = [by_name[n.name] for n in graph.node if n.name.startswith(scope)
                     and n.op in ("MatMul", "_FusedMatMul") and n.name in by_name]
        assert [d.size for d in matmul.output[0].tensor_description.shape.dim] == [4, 4]
        assert matmul.memory[0].total_bytes == 4 * 4 * 4
        assert sum(s.all_end_rel_micros for s in stats.node_stats) > 0


def test_missing_package_names_the_extra(monkeypatch, tmp_path):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith("tensorboard."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match=r"tapeflow\[tensorboard\]"):
        keras.callbacks.TensorBoard(tmp_path)
