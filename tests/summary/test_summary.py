"""tf.summary: what is written is what TensorBoard's own loader reads back."""

import gzip
import json

import numpy as np
import pytest

import tapeflow as tf

pytest.importorskip("tensorboard")
import events  # noqa: E402


def test_scalar_histogram_image_text_round_trip(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    data = np.random.RandomState(0).randn(500)
    images = np.random.RandomState(1).rand(2, 6, 5, 3)
    with writer.as_default():
        for step in range(3):
            tf.summary.scalar("loss", tf.constant(1.0 / (step + 1)), step=step)
        tf.summary.histogram("w", data, step=0, buckets=7)
        tf.summary.image("img", images, step=0, max_outputs=2)
        tf.summary.text("note", "hello **world**", step=0)
        tf.summary.experimental.set_step(9)
        tf.summary.scalar("at_default_step", 2.5)
        with tf.summary.record_if(False):
            tf.summary.scalar("skipped", 1.0)
        with tf.summary.record_if(lambda: True):
            tf.summary.scalar("kept", 1.0)
    tf.summary.experimental.set_step(None)
    writer.close()
    got = events.values(tmp_path)
    assert [(s, float(v)) for s, v in got["loss"]] == [(0, 1.0), (1, 0.5),
                                                       (2, pytest.approx(1 / 3))]
    assert got["at_default_step"][0][0] == 9 and "skipped" not in got and "kept" in got
    (_, hist), = got["w"]
    assert hist.shape == (7, 3) and hist[:, 2].sum() == 500
    assert hist[0, 0] == pytest.approx(data.min()) and hist[-1, 1] == pytest.approx(data.max())
    (_, img), = got["img"]
    assert img[:2].tolist() == [b"5", b"6"] and len(img) == 4  # width, height, two PNGs
    import io

    from PIL import Image
    decoded = np.asarray(Image.open(io.BytesIO(img[2])))
    np.testing.assert_allclose(decoded / 255.0, images[0], atol=1 / 255 + 1e-9)
    assert got["note"][0][1].item() == b"hello **world**"


def test_audio_and_generic_write_round_trip_through_tensorboards_loader(tmp_path):
    import wave

    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.audio import metadata as audio_metadata

    rng = np.random.default_rng(2)
    clips = rng.uniform(-0.9, 0.9, size=(3, 400, 2)).astype(np.float32)
    pr_meta = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="custom", content=b"x"))
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert tf.summary.audio("clip", clips, 8000, step=4, max_outputs=2)
        assert tf.summary.write("raw", tf.constant([[1.5, 2.0]]), step=1, metadata=pr_meta)
        tf.function(lambda x: tf.summary.write("traced", x * 2.0, step=2,
                                               metadata=pr_meta.SerializeToString()))(
            tf.constant([1.0, 3.0]))
    writer.close()
    got = events.values(tmp_path)
    (step, rows), = got["clip"]
    assert step == 4 and rows.shape == (2, 2) and rows[:, 1].tolist() == [b"", b""]
    import io

    for encoded, clip in zip(rows[:, 0], clips):
        with wave.open(io.BytesIO(encoded)) as wav:  # Python's own WAV reader
            assert (wav.getframerate(), wav.getnchannels(), wav.getnframes()) == (8000, 2, 400)
            pcm = np.frombuffer(wav.readframes(400), "<i2").reshape(400, 2)
        np.testing.assert_allclose(pcm / 32768.0, clip, atol=1 / 32768)
    np.testing.assert_array_equal(got["raw"][0][1], [[1.5, 2.0]])
    assert got["traced"] == [(2, pytest.approx(np.array([2.0, 6.0])))]
    plugins = {v.tag: v.metadata.plugin_data for e in events.load(tmp_path)
               for v in e.summary.value}
    assert plugins["raw"].plugin_name == "custom" and plugins["traced"].content == b"x"
    assert plugins["clip"].plugin_name == audio_metadata.PLUGIN_NAME
    with pytest.raises(ValueError, match="encoding"):
        tf.summary.audio("clip", clips, 8000, step=0, encoding="mp3")
    with pytest.raises(TypeError, match="metadata"):
        tf.summary.write("bad", 1.0, step=0, metadata={"plugin": "x"})


def test_no_step_and_no_writer():
    assert tf.summary.scalar("x", 1.0, step=1) is False  # no default writer: nothing written
    writer = tf.summary.create_noop_writer()
    with writer.as_default():
        assert not tf.summary.should_record_summaries()


def test_missing_step_is_an_error(tmp_path):
    with tf.summary.create_file_writer(str(tmp_path)).as_default():
        with pytest.raises(ValueError, match="No step set"):
            tf.summary.scalar("x", 1.0)


def test_summary_inside_tf_function_writes_at_run_time(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))

    @tf.function
    def f(x, step):
        y = tf.reduce_sum(x * 2.0)
        tf.summary.scalar("y", y, step=step)
        return y

    step = tf.Variable(10, dtype=tf.int64)

    @tf.function
    def g(x):
        step.assign_add(1)
        tf.summary.scalar("z", tf.reduce_sum(x))  # the default step: a variable, read each run
        return x

    with writer.as_default():
        for i in range(3):
            f(tf.constant([1.0, float(i)]), tf.constant(i, tf.int64))
        tf.summary.experimental.set_step(step)
        g(tf.constant([1.0]))
        g(tf.constant([2.0]))
    tf.summary.experimental.set_step(None)
    writer.flush()
    got = events.values(tmp_path)
    assert f.experimental_get_tracing_count() == 1
    assert [(s, float(v)) for s, v in got["y"]] == [(0, 2.0), (1, 4.0), (2, 6.0)]
    assert [(s, float(v)) for s, v in got["z"]] == [(11, 1.0), (12, 2.0)]


def _graph(tmp_path):
    (event,) = [e for e in events.load(tmp_path) if e.graph_def]
    from tensorboard.compat.proto import graph_pb2

    return graph_pb2.GraphDef.FromString(event.graph_def)


def test_seed_003_file_writer_graph(tmp_path):
    """Seed 003: Const, Const_1 and Add (T = DT_INT32), as TensorBoard shows it."""
    tf1 = tf.compat.v1
    with tf1.Graph().as_default():
        a = tf.constant(2)
        b = tf.constant(3)
        x = tf.add(a, b)
        writer = tf1.summary.FileWriter(str(tmp_path), tf1.get_default_graph())
        with tf1.Session() as sess:
            assert sess.run(x) == 5
        writer.close()
    graph = _graph(tmp_path)
    nodes = {n.name: n for n in graph.node}
    assert list(nodes) == ["Const", "Const_1", "Add"]
    add = nodes["Add"]
    assert add.op == "AddV2" and list(add.input) == ["Const", "Const_1"]
    from tensorboard.compat.proto import types_pb2

    assert add.attr["T"].type == types_pb2.DT_INT32
    assert nodes["Const_1"].attr["value"].tensor.int_val == [3]


def test_function_graph_has_name_scopes_and_variables(tmp_path):
    v = tf.Variable(tf.ones([3, 4]), name="dense/kernel")

    @tf.function
    def f(x):
        with tf.name_scope("layer1"):
            return tf.nn.relu(tf.matmul(x, v))

    concrete = f.get_concrete_function(tf.TensorSpec([None, 3]))
    with tf.summary.create_file_writer(str(tmp_path)).as_default():
        tf.summary.graph(concrete)
    graph = _graph(tmp_path)
    by_op = {}
    for n in graph.node:
        by_op.setdefault(n.op, []).append(n)
    assert any(n.name.startswith("layer1/") for n in by_op["MatMul"])
    (handle,) = by_op["VarHandleOp"]
    assert handle.name == "dense/kernel"
    assert any("dense/kernel" in n.input for n in by_op["ReadVariableOp"])
    (ph,) = by_op["Placeholder"]
    assert [d.size for d in ph.attr["shape"].shape.dim] == [-1, 3]


def test_trace_export_graph_and_run_metadata(tmp_path):
    counter = tf.Variable(0.0)

    @tf.function
    def step(x):
        counter.assign_add(1.0)
        with tf.name_scope("dense"):
            return tf.nn.relu(tf.matmul(x, tf.ones([3, 4])))

    writer = tf.summary.create_file_writer(str(tmp_path))
    tf.summary.trace_on(graph=True, profiler=True)
    step(np.ones((2, 3), np.float32))
    with writer.as_default():
        tf.summary.trace_export("step_trace", step=0)
    writer.close()
    assert float(counter.numpy()) == 1.0  # the profiled run left the variable as it was
    evs = events.load(tmp_path)
    assert any(e.graph_def for e in evs)
    (tagged,) = [e.tagged_run_metadata for e in evs if e.HasField("tagged_run_metadata")]
    from tensorboard.compat.proto import config_pb2

    meta = config_pb2.RunMetadata.FromString(tagged.run_metadata)
    assert tagged.tag == "step_trace"
    stats = {s.node_name: s for s in meta.step_stats.dev_stats[0].node_stats}
    matmul = stats["dense/MatMul"]
    assert matmul.memory[0].total_bytes == 2 * 4 * 4
    assert [d.size for d in matmul.output[0].tensor_description.shape.dim] == [2, 4]
    assert all(s.all_end_rel_micros >= 0 for s in stats.values())
    graph = _graph(tmp_path)
    assert set(stats) <= {n.name for n in graph.node}


def test_compat_v1_scalar_merge_all(tmp_path):
    tf1 = tf.compat.v1
    with tf1.Graph().as_default():
        x = tf1.placeholder(tf.float32, [])
        tf1.summary.scalar("x", x)
        tf1.summary.scalar("x2", x * 2.0)
        merged = tf1.summary.merge_all()
        writer = tf1.summary.FileWriter(str(tmp_path))
        with tf1.Session() as sess:
            for i in range(2):
                writer.add_summary(sess.run(merged, {x: float(i + 1)}), i)
        writer.close()
    got = events.values(tmp_path)
    assert [(s, float(v)) for s, v in got["x2"]] == [(0, 2.0), (1, 4.0)]


def test_profiler_writes_chrome_trace(tmp_path):
    @tf.function
    def f(x):
        return tf.reduce_sum(tf.nn.relu(x))

    tf.profiler.experimental.start(str(tmp_path))
    with tf.profiler.experimental.Trace("my_step", step_num=1):
        f(np.ones(4, np.float32))
    path = tf.profiler.experimental.stop()
    assert path.endswith(".trace.json.gz") and "/plugins/profile/" in path
    trace = json.load(gzip.open(path))["traceEvents"]
    names = {e["name"] for e in trace if e["ph"] == "X"}
    assert {"my_step", "Relu", "Sum"} <= names
    threads = {e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    assert "tapeflow executor (graph nodes)" in threads and "MainThread" in threads
    with pytest.raises(RuntimeError, match="not running"):
        tf.profiler.experimental.stop()


def test_profiler_samples_the_input_pipeline_threads(tmp_path):
    def work(x):
        return np.linalg.svd(np.random.RandomState(int(x)).rand(60, 60))[1][:1].astype(
            np.float32)

    ds = tf.data.Dataset.range(40).map(
        lambda x: tf.numpy_function(work, [x], tf.float32)).prefetch(4)
    tf.profiler.experimental.start(str(tmp_path))
    total = sum(float(v.numpy()[0]) for v in ds)
    path = tf.profiler.experimental.stop()
    assert total > 0
    trace = json.load(gzip.open(path))["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    sampled = [e for e in trace if e.get("cat") == "sampled"]
    data_tracks = {threads[e["tid"]] for e in sampled if threads[e["tid"]].startswith("tf.data")}
    assert data_tracks, sorted(set(threads.values()))


def test_session_run_metadata_full_trace(tmp_path):
    """TF1's recipe for the Graphs dashboard's compute time and memory: Session.run with
    RunOptions(trace_level=FULL_TRACE) fills a RunMetadata; FileWriter.add_run_metadata writes
    it; its node names are the GraphDef's (``Add`` for tf.add)."""
    tf1 = tf.compat.v1
    with tf1.Graph().as_default() as g:
        x = tf1.placeholder(tf.float32, [None, 3])
        y = tf.add(tf.matmul(x, tf.ones([3, 5])), 1.0)
        writer = tf1.summary.FileWriter(str(tmp_path), g)
        with tf1.Session() as sess:
            meta = tf1.RunMetadata()
            out = sess.run(y, {x: np.ones((4, 3))}, options=tf1.RunOptions(
                trace_level=tf1.RunOptions.FULL_TRACE), run_metadata=meta)
            plain = tf1.RunMetadata()
            sess.run(y, {x: np.ones((4, 3))}, run_metadata=plain)
        writer.add_run_metadata(meta, "step1")
        writer.close()
    np.testing.assert_array_equal(out, np.full((4, 5), 4.0, np.float32))
    assert not plain.step_stats.dev_stats  # no trace asked for
    stats = {s.node_name: s for s in meta.step_stats.dev_stats[0].node_stats}
    assert stats["Add"].memory[0].total_bytes == 4 * 5 * 4  # the fed batch of 4
    assert set(stats) <= {n.name for n in _graph(tmp_path).node}
    (tagged,) = [e.tagged_run_metadata for e in events.load(tmp_path)
                 if e.HasField("tagged_run_metadata")]
    assert tagged.tag == "step1"
