"""Cluster resolvers, dataset sharding between workers, gradient buckets: no processes."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.distribute import collective_ops, input_lib
from tapeflow.framework import tape as tape_mod


def test_tf_config_resolver(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["h0:1"], "worker": ["h1:2", "h2:3"], "ps": ["h3:4"]},
        "task": {"type": "worker", "index": 1}}))
    r = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    assert (r.task_type, r.task_id) == ("worker", 1)
    assert r.cluster_spec().as_dict()["worker"] == ["h1:2", "h2:3"]
    assert r.worker_tasks() == [("chief", 0), ("worker", 0), ("worker", 1)]
    assert r.num_workers == 3 and r.master() == "h2:3"
    assert r.master("ps", 0, rpc_layer="grpc") == "grpc://h3:4"
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        tf.distribute.cluster_resolver.TFConfigClusterResolver()
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]},
                                                "task": {"type": "worker", "index": 3}}))
    with pytest.raises(ValueError, match="worker:3 is not in the cluster"):
        tf.distribute.cluster_resolver.TFConfigClusterResolver()


def test_cluster_spec_and_simple_resolver():
    spec = tf.train.ClusterSpec({"worker": {1: "b:2", 0: "a:1"}, "ps": ["p:3"]})
    assert spec.job_tasks("worker") == ["a:1", "b:2"] and spec.num_tasks("ps") == 1
    assert tf.train.ClusterSpec(spec) == spec
    r = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, task_type="ps", task_id=0)
    assert r.master() == "p:3" and r.cluster_spec() == spec


def test_single_process_strategy_needs_no_mpi(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    assert strategy.num_replicas_in_sync == 1 and strategy.is_chief
    assert strategy.cluster_resolver.task_type == "worker"
    with strategy.scope():
        v = tf.Variable([1.0, 2.0])
    out = strategy.run(lambda: tf.distribute.get_replica_context().all_reduce("SUM", v * 2.0))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0])
    assert float(strategy.reduce("MEAN", tf.constant([1.0, 3.0]), axis=0)) == 2.0
    with pytest.raises(ValueError, match="timeout_seconds must be > 0"):
        tf.distribute.experimental.CommunicationOptions(timeout_seconds=0)


def _batches(ds) -> list:
    return [np.asarray(b[0] if isinstance(b, tuple) else b).tolist() for b in ds]


def test_data_sharding_splits_each_global_batch():
    ds = tf.data.Dataset.range(10).batch(4)
    parts = [_batches(input_lib.DistributedDataset(ds, 2, i)) for i in range(2)]
    assert parts == [[[0, 1], [4, 5], [8]], [[2, 3], [6, 7], [9]]]
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    off = input_lib.DistributedDataset(ds.with_options(options), 2, 1)
    assert _batches(off) == [[0, 1], [2, 3], [4, 5], [6, 7], [8], [9]]
    with pytest.raises(ValueError, match="must be batched"):
        list(input_lib.DistributedDataset(tf.data.Dataset.range(3), 2, 0))


def test_file_sharding_gives_each_worker_its_own_files(tmp_path):
    for i in range(4):
        with tf.io.TFRecordWriter(str(tmp_path / f"f{i}.tfrecord")) as w:
            for j in range(3):
                w.write(f"{i}-{j}".encode())
    files = tf.data.Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False)
    ds = tf.data.TFRecordDataset(files).batch(2)
    seen = []
    for worker in range(2):
        dist = input_lib.DistributedDataset(ds, 2, worker)
        assert dist.policy is tf.data.experimental.AutoShardPolicy.FILE
        rows = [r.decode() for b in dist for r in np.asarray(b).ravel()]
        assert {r.split("-")[0] for r in rows} == ({"0", "2"} if worker == 0 else {"1", "3"})
        seen += rows
    assert sorted(seen) == sorted(f"{i}-{j}" for i in range(4) for j in range(3))
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.FILE
    with pytest.raises(ValueError, match="AutoShardPolicy.FILE needs"):
        input_lib.DistributedDataset(tf.data.Dataset.range(4).batch(2).with_options(options), 2, 0)


def test_buckets_pack_small_gradients_last_layer_first():
    sizes = [(400, "f4"), (4_000_000, "f4"), (400, "f4"), (800, "f8"), (400, "f4")]
    assert collective_ops.plan_buckets(sizes, 1 << 20) == [[4, 2], [3], [1], [0]]
    assert collective_ops.plan_buckets(sizes, 8 << 20) == [[4, 2, 1, 0], [3]]


def test_sync_batch_norm_on_one_replica_is_batch_norm():
    x = np.random.default_rng(0).normal(1.0, 2.0, size=(6, 3, 3, 4)).astype(np.float32)
    bn = tf.keras.layers.BatchNormalization(momentum=0.5)
    sync = tf.keras.layers.experimental.SyncBatchNormalization(momentum=0.5)

    def run(layer, traced):
        def step(t):
            with tf.GradientTape() as tape:
                tape.watch(t)
                y = layer(t, training=True)
                loss = tf.reduce_sum(y * y * tf.range(4, dtype=tf.float32))
            return y, tape.gradient(loss, [t] + layer.trainable_variables)
        return (tf.function(step) if traced else step)(tf.constant(x))

    for traced in (False, True):
        (y0, g0), (y1, g1) = run(bn, traced), run(sync, traced)
        np.testing.assert_allclose(y1.numpy(), y0.numpy(), atol=2e-6)
        for a, b in zip(g1, g0):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-5)
    np.testing.assert_allclose(sync.moving_variance.numpy(), bn.moving_variance.numpy(),
                               rtol=1e-6)


def test_batch_norm_synchronized_argument_round_trips_its_config():
    bn = tf.keras.layers.BatchNormalization(synchronized=True, momentum=0.5)
    assert bn.get_config()["synchronized"] is True
    again = tf.keras.layers.BatchNormalization.from_config(bn.get_config())
    assert again.synchronized and not tf.keras.layers.BatchNormalization().synchronized
    assert tf.keras.layers.experimental.SyncBatchNormalization().synchronized


class _LoopbackComm:
    """A two-rank communicator whose all-reduce leaves the buffer as it is."""

    size, rank = 2, 0

    def iallreduce(self, buf, op, what, out=None):
        from tapeflow.distribute.communicator import Pending

        pending = Pending(self, None, buf, what, 0)
        pending.done = True
        return pending


def test_traced_step_posts_a_bucket_before_the_backward_pass_ends():
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, "relu", input_shape=(32,)),
                                 tf.keras.layers.Dense(64, "relu"), tf.keras.layers.Dense(10)])
    optimizer = tf.keras.optimizers.SGD(0.1)
    x = np.ones((8, 32), np.float32)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        grads = collective_ops.all_reduce_gradients(grads, _LoopbackComm(), 20_000)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    step(x)
    lines = step.get_concrete_function(x).code.splitlines()
    starts = [i for i, line in enumerate(lines) if "collective_bucket_start(" in line]
    products = [i for i, line in enumerate(lines) if "dot(" in line]
    assert len(starts) == 2  # the first layer's 8 KB kernel does not fit the first bucket
    assert starts[0] < products[-1]  # posted while the first layer's gradient is computed


class _RecordingComm(_LoopbackComm):
    def __init__(self, events: list):
        self.events = events

    def iallreduce(self, buf, op, what, out=None):
        self.events.append(("post", buf.size))
        return super().iallreduce(buf, op, what, out)


def test_eager_backward_pass_posts_buckets_before_it_ends(monkeypatch):
    """The tape's gradient-ready hook: in an eager step a bucket is posted as soon as its
    gradients are final, before the first layers' gradients exist."""
    model = tf.keras.Sequential([tf.keras.layers.Embedding(50, 32, input_length=4),
                                 tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(64, "relu"),
                                 tf.keras.layers.Dense(64, "relu"), tf.keras.layers.Dense(10)])
    ids = np.arange(32).reshape(8, 4)
    model(ids)
    events: list = []
    made: list = []

    def hook(sources):
        buckets = collective_ops.EagerBuckets(sources, _RecordingComm(events), 20_000)
        made.append(buckets)

        def ready(i, grad):
            events.append(("final", i))
            buckets.ready(i, grad)

        return ready

    monkeypatch.setattr(tape_mod, "gradient_ready_hooks", [hook])
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(ids) ** 2)
    grads = tape.gradient(loss, variables)
    posts = [i for i, e in enumerate(events) if e[0] == "post"]
    # buckets of at most 20 KB: [out layer + 2nd + 1st's bias], [1st kernel]; the embedding's
    # IndexedSlices stays out (its rows are all-gathered)
    assert len(posts) == 2
    assert posts[0] < events.index(("final", 1))  # before the first Dense's kernel gradient
    assert posts[1] < events.index(("final", 0))  # before the embedding's gradient
    assert isinstance(grads[0], tf.IndexedSlices)
    # apply_gradients hands over this pass's dense gradients: those buckets
    dense = [None] + list(grads[1:])
    reduced = made[0].finish(dense, variables)
    assert reduced[0] is None
    for r, g in zip(reduced[1:], grads[1:]):  # the loopback sum leaves each buffer as it was
        np.testing.assert_array_equal(r.numpy(), g.numpy())
    # other gradients (clipped): not this pass's; the posted buckets are still waited for
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(ids) ** 2)
    grads = tape.gradient(loss, variables)
    assert made[1].finish([None] + [g * 0.5 for g in grads[1:]], variables) is None
    assert made[1]._started == []


def test_bucket_buffers_are_reused_only_once_nothing_holds_them():
    """Buckets pack into buffers kept across steps (no fresh allocation per step), and the
    reduced gradients are views of them; a buffer whose gradients are still held is never
    packed again, so a kept gradient keeps its value."""
    rng = np.random.default_rng(0)
    shapes = [(3, 5), (7,), (2, 2, 2)]
    comm = _LoopbackComm()

    def step(scale):
        grads = [tf.constant((scale * rng.normal(size=s)).astype(np.float32)) for s in shapes]
        return grads, collective_ops.all_reduce_gradients(grads, comm, 1 << 20)

    layout = (tuple(reversed(shapes)), np.dtype(np.float32).str)  # last variables first
    collective_ops._layouts.pop(layout, None)
    kept_in, kept_out = step(1.0)
    kept = [g.numpy().copy() for g in kept_out]
    for scale in (10.0, 100.0):  # earlier results still held: a new buffer each time
        grads, out = step(scale)
        for g, r in zip(grads, out):
            np.testing.assert_array_equal(r.numpy(), g.numpy())
    for g, k, r in zip(kept_in, kept, kept_out):
        np.testing.assert_array_equal(r.numpy(), k)
        np.testing.assert_array_equal(r.numpy(), g.numpy())
    assert len(collective_ops._layouts[layout].buffers) == 3
    del grads, out, kept_out
    for _ in range(3):  # nothing held between steps: the same buffer every time
        step(1.0)
    assert len(collective_ops._layouts[layout].buffers) == 3


class _DeferredComm(_LoopbackComm):
    """A two-rank communicator whose all-reduces finish only when waited for (as an MPI
    request does that nobody tests), logging posts and waits."""

    def __init__(self, events: list):
        self.events = events

    def iallreduce(self, buf, op, what, out=None):
        from tapeflow.distribute.communicator import Pending

        events, n = self.events, sum(e[0] == "post" for e in self.events) + 1

        class Deferred(Pending):
            def test(self):
                return self.done

            def wait(self):
                if not self.done:
                    events.append(("wait", n))
                    self.done = True
                return self.result

        self.events.append(("post", n))
        return Deferred(self, None, buf, what, 0)


def test_one_bucket_is_in_flight_at_a_time():
    """Posting a bucket first finishes the one posted before it (8 concurrent MPICH
    all-reduces of 4 MB took 13.2 ms, the same ones back to back 11.2 ms), and every posted
    bucket is waited for exactly once."""
    events: list = []
    grads = [tf.constant(np.full(s, i, np.float32)) for i, s in enumerate([300, 200, 100, 50])]
    out = collective_ops.all_reduce_gradients(grads, _DeferredComm(events), 1200)
    assert events == [("post", 1), ("wait", 1), ("post", 2), ("wait", 2), ("post", 3),
                      ("wait", 3)]
    for g, r in zip(grads, out):
        np.testing.assert_array_equal(r.numpy(), g.numpy())


@pytest.mark.parametrize("traced", [False, True])
def test_buckets_pack_any_layout_and_unpack_views(traced):
    """Scalars, matrices, non-contiguous (transposed, strided) gradients and two dtypes pack
    into their buckets and come back with their shapes and values, eagerly and in a traced
    step; eagerly each result is a view of its bucket's buffer (no copy on the way out)."""
    rng = np.random.default_rng(1)
    values = [np.float32(2.5), rng.normal(size=(3, 4)).astype(np.float32),
              rng.normal(size=(5, 3)).astype(np.float64).T, np.arange(7, dtype=np.float32),
              rng.normal(size=(2, 3, 4)).astype(np.float32)[:, ::2, :]]

    def reduce():
        grads = [tf.constant(v) for v in values[:2]] + [None] + \
            [tf.constant(v) for v in values[2:]]
        out = collective_ops.all_reduce_gradients(grads, _LoopbackComm(), 1 << 20)
        assert out[2] is None
        return out[:2] + out[3:]

    out = tf.function(reduce)() if traced else reduce()
    for r, v in zip(out, values):
        assert r.shape == np.shape(v) and r.dtype == tf.as_dtype(np.asarray(v).dtype)
        np.testing.assert_array_equal(r.numpy(), v)
        if np.ndim(v) and not traced:
            assert r.numpy().base is not None


def test_fit_logs_sum_metric_states_over_workers_and_find_the_metrics_once():
    """The per-batch logs hook: each metric's state summed over the workers (here a fake
    communicator of 2 identical workers), the result computed from the sums, the local state
    restored; ``model.metrics`` (a walk over every layer) is read once, not every batch."""
    from tapeflow.distribute import keras_fit

    class TwoWorkers:
        def allreduce(self, array, op, what):
            return array * 2

    class Strategy:
        communicator = TwoWorkers()

    mean = tf.keras.metrics.Mean(name="loss")

    class Model:
        reads = 0

        @property
        def metrics(self):
            Model.reads += 1
            return [mean]

    hooks = keras_fit._MultiWorkerHooks(Model(), Strategy())
    for step, value in enumerate([3.0, 5.0, 7.0]):
        mean.update_state(value)
        logs = hooks.logs({"loss": value})
        assert logs["loss"] == pytest.approx(np.mean([3.0, 5.0, 7.0][:step + 1]))
        assert float(mean.total.numpy()) == sum([3.0, 5.0, 7.0][:step + 1])  # restored
        assert float(mean.count.numpy()) == step + 1
    assert Model.reads == 1
    hooks.logs({"loss": 1.0, "acc": 0.5})  # other logs: the metrics are looked up again
    assert Model.reads == 2
