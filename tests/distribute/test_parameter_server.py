"""ParameterServerStrategy + ClusterCoordinator on a local Ray cluster (one per module: Ray
takes seconds to start): Downpour training, a worker killed mid-training, a parameter server
killed and training resumed from a checkpoint."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import tapeflow as tf

ray = pytest.importorskip("ray")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(512, 8)).astype(np.float32)
Y = (X @ RNG.normal(size=(8, 1))).astype(np.float32)


@pytest.fixture(scope="module", autouse=True)
def ray_cluster():
    yield
    if ray.is_initialized():
        ray.shutdown()


def _job(workers: int = 2, ps: int = 2, momentum: float = 0.0):
    spec = tf.train.ClusterSpec({"chief": ["localhost:2222"],
                                 "worker": [f"localhost:{3000 + i}" for i in range(workers)],
                                 "ps": [f"localhost:{4000 + i}" for i in range(ps)]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc"),
        variable_partitioner=tf.distribute.experimental.partitioners.MinSizePartitioner(
            min_shard_bytes=256, max_shards=ps))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        tf.random.set_seed(0)
        model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu",
                                                           input_shape=(8,)),
                                     tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.SGD(0.05, momentum=momentum)

    def dataset_fn(ctx):
        ds = tf.data.Dataset.from_tensor_slices((X, Y))
        return ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id).repeat().batch(32)

    @tf.function
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))

    @tf.function
    def step_fn(it):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        x, y = next(it)
        return strategy.run(replica_fn, args=(x, y))

    schedule = lambda: coordinator.schedule(step_fn, args=(iterator,))  # noqa: E731
    return strategy, coordinator, model, optimizer, schedule


def _mse(model) -> float:
    return float(np.mean((model(X).numpy() - Y) ** 2))


def test_downpour_training_survives_a_killed_worker():
    strategy, coordinator, model, _, schedule = _job()
    try:
        kernel = model.layers[0].kernel  # (8, 16) float32 over MinSizePartitioner(256 bytes)
        assert isinstance(kernel, tf.distribute.experimental.ShardedVariable)
        layout = strategy.variable_layout[kernel.name]
        assert [(ps, a, b) for ps, a, b in layout] == [(0, 0, 4), (1, 4, 8)]  # both servers
        start = _mse(model)
        first = [schedule() for _ in range(10)]
        coordinator.join()
        victim = coordinator.worker_pids()[0]
        losses = [schedule() for _ in range(100)]
        while sum(v._done.is_set() for v in losses) < 10:
            time.sleep(0.005)
        os.kill(victim, signal.SIGKILL)
        coordinator.join()  # training went on: every call ran, some of them a second time
        values = [float(v.fetch()) for v in first + losses]
        assert all(np.isfinite(values))
        assert coordinator.retried_calls >= 1
        deadline = time.monotonic() + 60
        while coordinator.worker_restarts[0] < 1 and time.monotonic() < deadline:
            time.sleep(0.1)  # Ray restarts the dead worker in the background
        assert coordinator.worker_restarts[0] == 1
        assert coordinator.worker_pids()[0] != victim
        before = list(coordinator.calls_per_worker)
        for v in [schedule() for _ in range(20)]:
            v.fetch()
        coordinator.join()
        assert coordinator.calls_per_worker[0] > before[0]  # the restarted worker rejoined
        assert _mse(model) < start / 4  # the coordinator's copy holds the servers' values
        report = coordinator.staleness()
        # two servers, 130 steps; a call the dead worker had pushed before dying ran twice
        assert 2 * 130 <= report["updates"] <= 2 * (130 + coordinator.retried_calls)
        assert sum(report["histogram"].values()) == report["updates"]
    finally:
        coordinator.shutdown()


@pytest.mark.slow
def test_killed_parameter_server_is_named_and_training_resumes_from_checkpoint(tmp_path):
    strategy, coordinator, model, optimizer, schedule = _job(workers=1, ps=2, momentum=0.9)
    try:
        for _ in range(20):
            schedule()
        coordinator.join()
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        path = checkpoint.save(str(tmp_path / "ckpt"))
        saved = _mse(model)
        momentum = np.concatenate([optimizer.get_slot(shard, "momentum").numpy()
                                   for shard in model.layers[0].kernel.variables])
        os.kill(coordinator.ps_pids()[1], signal.SIGKILL)
        with pytest.raises(tf.errors.UnavailableError, match="parameter server ps:1 is gone"):
            for _ in range(20):
                schedule()
            coordinator.join()
    finally:
        coordinator.shutdown()
    strategy, coordinator, model, optimizer, schedule = _job(workers=1, ps=2, momentum=0.9)
    try:
        tf.train.Checkpoint(model=model, optimizer=optimizer).restore(path)
        assert _mse(model) == pytest.approx(saved)
        schedule().fetch()  # the restored values and slots went to the new servers
        coordinator.join()
        assert int(optimizer.iterations.numpy()) == 21
        assert np.abs(momentum).max() > 0
        for _ in range(20):
            schedule()
        coordinator.join()
        assert _mse(model) < saved
    finally:
        coordinator.shutdown()


def _bn_job(model_seed: int = 0):
    """1 worker, 1 ps: Downpour is then plain sequential training, so it must match a local
    run exactly; the model has batch-norm moving statistics (non-trainable, on the server)."""
    spec = tf.train.ClusterSpec({"chief": ["localhost:2222"], "worker": ["localhost:3000"],
                                 "ps": ["localhost:4000"]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model, optimizer = _bn_model(model_seed)

    train_step = _train_step()  # a closure: Ray sends it by value

    @tf.function
    def step_fn():
        return strategy.run(train_step, args=(model, optimizer))

    return coordinator, model, optimizer, step_fn


def _bn_model(seed: int):
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, input_shape=(8,)),
                                 tf.keras.layers.BatchNormalization(momentum=0.5),
                                 tf.keras.layers.ReLU(), tf.keras.layers.Dense(1)])
    return model, tf.keras.optimizers.SGD(0.05, momentum=0.9)


def _train_step():
    def train_step(model, optimizer):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(X[:64], training=True) - Y[:64]))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return train_step


def test_slots_and_moving_statistics_live_on_the_server_and_resume_from_a_checkpoint(tmp_path):
    local_model, local_opt = _bn_model(0)
    train_step = _train_step()
    for _ in range(11):
        train_step(local_model, local_opt)
    coordinator, model, optimizer, step_fn = _bn_job()
    try:
        for _ in range(10):
            coordinator.schedule(step_fn)
        coordinator.join()
        assert int(optimizer.iterations.numpy()) == 10  # the server's count, pulled back
        momentum = optimizer.get_slot(model.layers[0].kernel, "momentum").numpy()
        assert np.abs(momentum).max() > 0  # the server's slot, pulled back
        assert np.abs(model.layers[1].moving_mean.numpy()).max() > 0  # pushed by the worker
        path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "c"))
    finally:
        coordinator.shutdown()
    coordinator, model, optimizer, step_fn = _bn_job(model_seed=1)  # other initial values
    try:
        tf.train.Checkpoint(model=model, optimizer=optimizer).restore(path)
        coordinator.schedule(step_fn)  # the 11th step, with the restored momentum
        coordinator.join()
        assert int(optimizer.iterations.numpy()) == 11
        for got, want in zip(model.get_weights(), local_model.get_weights()):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    finally:
        coordinator.shutdown()


def test_model_fit_with_a_dataset_creator_trains_on_the_workers():
    spec = tf.train.ClusterSpec({"chief": ["localhost:2222"],
                                 "worker": ["localhost:3000", "localhost:3001"],
                                 "ps": ["localhost:4000"]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec))
    with strategy.scope():
        model, _ = _bn_model(0)
        model.compile(tf.keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    contexts = []

    def dataset_fn(ctx):
        contexts.append(ctx.input_pipeline_id)  # on the workers: the coordinator's list stays []
        ds = tf.data.Dataset.from_tensor_slices((X, Y))
        return ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id).repeat().batch(32)

    creator = tf.keras.utils.experimental.DatasetCreator(dataset_fn)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(creator, epochs=1)
    start = _mse(model)
    try:
        history = model.fit(creator, epochs=3, steps_per_epoch=20, verbose=0)
        coordinator = strategy._coordinator
        assert len(history.history["loss"]) == 3 and "mae" in history.history
        assert history.history["loss"][-1] < history.history["loss"][0]
        assert sum(coordinator.calls_per_worker) == 60 and min(coordinator.calls_per_worker) > 0
        assert contexts == []  # the dataset function ran on the workers only
        assert _mse(model) < start / 2  # the coordinator's model holds the servers' values
        assert np.abs(model.layers[1].moving_mean.numpy()).max() > 0
        assert coordinator.staleness()["updates"] == 60
    finally:
        strategy._coordinator.shutdown()


IDS = RNG.integers(0, 20, size=(64, 3))
TARGET = RNG.normal(size=(64, 1)).astype(np.float32)


def _batch(step: int) -> tuple:
    """Even steps look up rows 0-9 only, odd steps rows 10-19: a sparse update rule (rows
    left alone when not looked up) and a dense one part ways."""
    return tf.constant(IDS % 10 + 10 * (step % 2)), tf.constant(TARGET)


def _embedding_model(seed: int, **clipping):
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.layers.Embedding(20, 4, input_length=3),
                                 tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
    model.build((None, 3))
    # the legacy class: its sparse rule keeps untouched rows (and their momentum) as they are
    return model, tf.keras.optimizers.legacy.SGD(0.1, momentum=0.9, **clipping)


def _embedding_step():
    def train_step(model, optimizer, ids, target):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(ids) - target))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return train_step


def _embedding_job(shards: int, seed: int, **clipping):
    """1 worker (sequential training: must match a local run), 2 servers, the embedding table
    a ShardedVariable of `shards` shards."""
    spec = tf.train.ClusterSpec({"chief": ["localhost:2222"], "worker": ["localhost:3000"],
                                 "ps": ["localhost:4000", "localhost:4001"]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec),
        variable_partitioner=tf.distribute.experimental.partitioners.FixedShardsPartitioner(
            shards))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model, optimizer = _embedding_model(seed, **clipping)
    train_step = _embedding_step()

    @tf.function
    def step_fn(ids, target):
        return strategy.run(train_step, args=(model, optimizer, ids, target))

    return strategy, coordinator, model, optimizer, step_fn


def test_sharded_embedding_trains_on_the_servers_and_reshards_from_a_checkpoint(tmp_path):
    """Each shard's rows are looked up on, and their sparse gradients applied by, the server
    holding it (the legacy optimizer's sparse rule there, as in TF); a checkpoint of 3 shards
    restores into 2; throughout, the same weights as training locally."""
    local_model, local_opt = _embedding_model(0)
    train_step = _embedding_step()
    for step in range(11):
        train_step(local_model, local_opt, *_batch(step))
    strategy, coordinator, model, optimizer, step_fn = _embedding_job(3, 0)
    try:
        table = model.layers[0].embeddings
        assert len(table.variables) == 3
        assert [ps for ps, _, _ in strategy.variable_layout[table.name]] == [0, 1, 0]
        for step in range(10):
            coordinator.schedule(step_fn, args=_batch(step))
        coordinator.join()
        assert coordinator.staleness()["max"] == 0  # one worker: never stale
        path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "c"))
    finally:
        coordinator.shutdown()
    strategy, coordinator, model, optimizer, step_fn = _embedding_job(2, seed=1)
    try:
        assert len(model.layers[0].embeddings.variables) == 2
        tf.train.Checkpoint(model=model, optimizer=optimizer).restore(path)  # 3 shards -> 2
        coordinator.schedule(step_fn, args=_batch(10))  # the 11th step, restored momentum
        coordinator.join()
        got = [np.asarray(model.layers[0].embeddings), np.asarray(model.layers[2].kernel)]
        want = [w.numpy() for w in local_model.layers[0].weights + local_model.layers[2].weights]
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    finally:
        coordinator.shutdown()


def test_global_clipnorm_clips_by_the_norm_over_every_server():
    """``global_clipnorm`` scales a step's gradients by their norm over all variables, the
    ones on both servers (the embedding's shards' rows included), as TensorFlow's worker clips
    before the servers apply: 1 worker on 2 servers trains as one process does. Clipped per
    server (each server's part by its own norm), the steps would be larger."""
    clip = {"global_clipnorm": 0.05}
    local_model, local_opt = _embedding_model(0, **clip)
    plain_model, plain_opt = _embedding_model(0)
    train_step = _embedding_step()
    for step in range(6):
        train_step(local_model, local_opt, *_batch(step))
        train_step(plain_model, plain_opt, *_batch(step))
    moved = [np.abs(a.numpy() - b.numpy()).max()
             for a, b in zip(local_model.weights, plain_model.weights)]
    assert min(moved) > 1e-3  # the clipping is active in every step
    strategy, coordinator, model, optimizer, step_fn = _embedding_job(2, 0, **clip)
    try:
        homes = {ps for layout in strategy.variable_layout.values() for ps, _, _ in layout}
        assert homes == {0, 1}
        for step in range(6):
            coordinator.schedule(step_fn, args=_batch(step))
        coordinator.join()
        got = [np.asarray(model.layers[0].embeddings), np.asarray(model.layers[2].kernel),
               np.asarray(model.layers[2].bias)]
        for g, want in zip(got, local_model.weights):
            np.testing.assert_allclose(g, want.numpy(), rtol=1e-5, atol=1e-6)
    finally:
        coordinator.shutdown()
