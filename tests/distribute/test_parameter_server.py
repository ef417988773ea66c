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


def _job(workers: int = 2, ps: int = 2):
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
        optimizer = tf.keras.optimizers.SGD(0.05)

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

    return strategy, coordinator, model, lambda: coordinator.schedule(step_fn, args=(iterator,))


def _mse(model) -> float:
    return float(np.mean((model(X).numpy() - Y) ** 2))


def test_downpour_training_survives_a_killed_worker():
    strategy, coordinator, model, schedule = _job()
    try:
        layout = strategy.variable_layout
        kernel = model.layers[0].kernel._ps_key
        assert [ps for ps, _, _ in layout[kernel]] == [0, 1]  # partitioned over both servers
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
    strategy, coordinator, model, schedule = _job(workers=1, ps=2)
    try:
        for _ in range(20):
            schedule()
        coordinator.join()
        checkpoint = tf.train.Checkpoint(model=model)
        path = checkpoint.save(str(tmp_path / "ckpt"))
        saved = _mse(model)
        os.kill(coordinator.ps_pids()[1], signal.SIGKILL)
        with pytest.raises(tf.errors.UnavailableError, match="parameter server ps:1 is gone"):
            for _ in range(20):
                schedule()
            coordinator.join()
    finally:
        coordinator.shutdown()
    strategy, coordinator, model, schedule = _job(workers=1, ps=2)
    try:
        tf.train.Checkpoint(model=model).restore(path)
        assert _mse(model) == pytest.approx(saved)
        for _ in range(20):
            schedule()
        coordinator.join()
        assert _mse(model) < saved
    finally:
        coordinator.shutdown()
