"""The real TensorBoard serves what tapeflow wrote: a `tensorboard --logdir` process on
127.0.0.1 at a free port, read through its HTTP data API (scalars, histograms, graphs, run
metadata, projector)."""

import numpy as np
import pytest

import tapeflow as tf

pytest.importorskip("tensorboard")
from tb_server import tensorboard  # noqa: E402

L = tf.keras.layers


def _fit(logdir, tmp_path):
    tf.random.set_seed(0)
    model = tf.keras.Sequential([L.Embedding(12, 3, input_length=4), L.Flatten(),
                                 L.Dense(5, activation="relu"), L.Dense(2)])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    rs = np.random.RandomState(0)
    x, y = rs.randint(0, 12, (24, 4)), rs.randint(0, 2, 24)
    labels = tmp_path / "labels.tsv"
    labels.write_text("".join(f"token{i}\n" for i in range(12)))
    board = tf.keras.callbacks.TensorBoard(str(logdir), histogram_freq=1, embeddings_freq=1,
                                           embeddings_metadata=str(labels))
    history = model.fit(x, y, batch_size=8, epochs=2, validation_split=0.25, verbose=0,
                        callbacks=[board])
    return model, history


def _seed_003(logdir):
    tf1 = tf.compat.v1
    with tf1.Graph().as_default() as g:
        tf.add(tf.constant(2), tf.constant(3))
        tf1.summary.FileWriter(str(logdir / "graphs"), g).close()


def _trace(logdir):
    @tf.function
    def step(x):
        with tf.name_scope("layer"):
            return tf.nn.relu(tf.matmul(x, tf.ones([3, 5])))

    tf.summary.trace_on(graph=True, profiler=True)
    step(np.ones((4, 3), np.float32))
    with tf.summary.create_file_writer(str(logdir / "trace")).as_default():
        tf.summary.trace_export("step_trace", step=0)


def test_tensorboard_serves_what_was_written(tmp_path):
    logdir = tmp_path / "logs"
    model, history = _fit(logdir, tmp_path)
    _seed_003(logdir)
    _trace(logdir)
    with tensorboard(logdir) as tb:
        tb.wait_for("/data/runs", lambda runs: {"train", "validation", "graphs"} <= set(runs))
        tags = tb.wait_for("/data/plugin/scalars/tags",
                           lambda t: "epoch_loss" in t.get("validation", {}))
        assert {"epoch_loss", "epoch_accuracy"} <= set(tags["train"])
        for run, key in (("train", "loss"), ("validation", "val_loss")):
            served = tb.json("/data/plugin/scalars/scalars", run=run, tag="epoch_loss")
            assert [step for _, step, _ in served] == [0, 1]
            np.testing.assert_allclose([v for _, _, v in served], history.history[key],
                                       rtol=1e-6)
        dense = model.layers[2]
        hist = tb.json("/data/plugin/histograms/histograms", run="train",
                       tag=dense.kernel.name.replace(":", "_"))
        assert [step for _, step, _ in hist] == [0, 1]
        buckets = np.array(hist[-1][2])
        kernel = dense.kernel.numpy()
        assert buckets[:, 2].sum() == kernel.size
        assert buckets[0, 0] == pytest.approx(kernel.min(), rel=1e-6)
        assert buckets[-1, 1] == pytest.approx(kernel.max(), rel=1e-6)

        seed = tb.get("/data/plugin/graphs/graph", run="graphs", conceptual="false").decode()
        assert 'name: "Const_1"' in seed and 'op: "AddV2"' in seed and "DT_INT32" in seed
        step_graph = tb.get("/data/plugin/graphs/graph", run="train",
                            conceptual="false").decode()
        scope = f'name: "{model.name}/{dense.name}/'  # its product, bias and ReLU fused or not
        assert scope in step_graph and ('op: "_FusedMatMul"' in step_graph
                                        or f'{scope}MatMul"' in step_graph)
        assert 'op: "VarHandleOp"' in step_graph
        keras_graph = tb.get("/data/plugin/graphs/graph", run="train", conceptual="true",
                             tag="keras").decode()
        assert '"Embedding"' in keras_graph or "Embedding" in keras_graph

        info = tb.wait_for("/data/plugin/graphs/info", lambda i: "trace" in i)
        assert info["trace"]["tags"]["step_trace"]["profile"] is True
        meta = tb.get("/data/plugin/graphs/run_metadata", run="trace", tag="step_trace").decode()
        assert 'node_name: "layer/MatMul"' in meta and "all_start_micros" in meta
        assert "total_bytes: 80" in meta  # MatMul's [4, 5] float32 output

        assert "train" in tb.json("/data/plugin/projector/runs")
        (info,) = tb.json("/data/plugin/projector/info", run="train")["embeddings"]
        assert info["tensorShape"] == [12, 3]
        raw = tb.get("/data/plugin/projector/tensor", run="train", name=info["tensorName"])
        np.testing.assert_allclose(np.frombuffer(raw, np.float32).reshape(12, 3),
                                   model.layers[0].embeddings.numpy(), rtol=1e-6)
        names = tb.get("/data/plugin/projector/metadata", run="train",
                       name=info["tensorName"], num_rows="12").decode().split()
        assert names[:2] == ["token0", "token1"]
