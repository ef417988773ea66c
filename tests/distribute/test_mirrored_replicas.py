"""MirroredStrategy over two logical CPUs: real replicas on threads, each with its share of the
batch, gradients summed over them; training matches one replica on the whole batch."""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import config

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 6)).astype(np.float32)
Y = np.tanh(X @ RNG.normal(size=(6, 2))).astype(np.float32)


@pytest.fixture
def two_cpus(monkeypatch):
    """The CPU split in two, as tf.config.set_logical_device_configuration does before first
    use (the setting is process-wide, so it is undone after the test)."""
    monkeypatch.setitem(config._settings, "logical",
                        [tf.config.LogicalDeviceConfiguration()] * 2)


def _model(sync_bn: bool = False):
    tf.random.set_seed(3)
    layers = [tf.keras.layers.Dense(16, input_shape=(6,))]
    if sync_bn:
        layers.append(tf.keras.layers.BatchNormalization(momentum=0.5, synchronized=True))
    layers += [tf.keras.layers.ReLU(), tf.keras.layers.Dense(2)]
    return tf.keras.Sequential(layers)


def _custom_loop(strategy, traced: bool):
    with strategy.scope():
        model = _model()
        optimizer = tf.keras.optimizers.Adam(0.01)
    seen = set()

    def step(x, y):
        seen.add((threading.current_thread().name, int(x.shape[0])))
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(x) - y), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=16)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def distributed(x, y):
        return strategy.reduce("SUM", strategy.run(step, args=(x, y)), axis=None)

    fn = tf.function(distributed) if traced else distributed
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(16)
    losses = [float(fn(x, y).numpy()) for x, y in strategy.experimental_distribute_dataset(
        dataset)]
    return model.get_weights(), losses, seen, int(optimizer.iterations.numpy())


@pytest.mark.parametrize("traced", [False, True])
def test_two_replicas_match_one_in_a_custom_loop(two_cpus, traced):
    two = tf.distribute.MirroredStrategy()
    assert two.num_replicas_in_sync == 2
    assert two.extended.worker_devices[1].endswith("device:CPU:1")
    w2, l2, seen, steps = _custom_loop(two, traced)
    w1, l1, _, _ = _custom_loop(tf.distribute.MirroredStrategy(["/cpu:0"]), traced)
    assert {name for name, _ in seen} == {"tapeflow-replica-0", "tapeflow-replica-1"}
    assert {rows for _, rows in seen} == {8}  # each replica got half of every batch of 16
    assert steps == 4  # one update per step, not one per replica
    np.testing.assert_allclose(l2, l1, rtol=1e-5)
    for a, b in zip(w2, w1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_keras_fit_with_synchronized_batch_norm_matches_one_replica(two_cpus):
    def fit(strategy):
        with strategy.scope():
            model = _model(sync_bn=True)
            model.compile(tf.keras.optimizers.SGD(0.1, momentum=0.9), "mse", metrics=["mae"])
        history = model.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return model, history.history

    m2, h2 = fit(tf.distribute.MirroredStrategy())
    m1, h1 = fit(tf.distribute.MirroredStrategy(["/cpu:0"]))
    assert int(m2.optimizer.iterations.numpy()) == 8
    for a, b in zip(m2.get_weights(), m1.get_weights()):  # moving statistics included
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for key in ("loss", "mae"):
        np.testing.assert_allclose(h2[key], h1[key], rtol=1e-5)


IDS = RNG.integers(0, 10, size=(16, 3))
TARGET = RNG.normal(size=(16, 1)).astype(np.float32)


def _embedding_loop(strategy, traced: bool):
    """Legacy SGD with momentum on an embedding: even steps look up rows 0-9, odd steps rows
    10-19, so a sparse rule (rows not looked up keep value and momentum) and a dense one part
    ways. Returns the weights and the (rows, sparse?) of every gradient the optimizer got."""
    with strategy.scope():
        tf.random.set_seed(5)
        model = tf.keras.Sequential([tf.keras.layers.Embedding(20, 4, input_length=3),
                                     tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
        model.build((None, 3))
        optimizer = tf.keras.optimizers.legacy.SGD(0.1, momentum=0.9)
    updates = []
    update_sparse = optimizer._update_sparse

    def counted(grad, *args, **kwargs):
        updates.append(int(grad.indices.shape[0]))
        return update_sparse(grad, *args, **kwargs)

    optimizer._update_sparse = counted

    def step(ids, target):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(ids) - target), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=16)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def distributed(ids, target):
        return strategy.run(step, args=(ids, target))

    fn = tf.function(distributed) if traced else distributed
    for i in range(6):
        ids = tf.constant(IDS + 10 * (i % 2))
        dataset = tf.data.Dataset.from_tensor_slices((ids, TARGET)).batch(16)
        for batch in strategy.experimental_distribute_dataset(dataset):
            fn(*batch)
    return model.get_weights(), updates


@pytest.mark.parametrize("traced", [False, True])
def test_embedding_gradients_are_summed_as_rows(two_cpus, traced):
    """An embedding's IndexedSlices gradient stays sparse through the cross-replica sum
    (the replicas' rows concatenated, as TensorFlow does), so 2 replicas train as 1 with a
    sparse update rule; summed densely, the rows of the other id range would keep moving."""
    w2, rows2 = _embedding_loop(tf.distribute.MirroredStrategy(), traced)
    w1, rows1 = _embedding_loop(tf.distribute.MirroredStrategy(["/cpu:0"]), traced)
    # every update came as rows: 48 ids per step, 24 from each replica (traced: counted when
    # traced, once: per-replica batches are composites, not Python values)
    assert rows2 == rows1 == ([48] if traced else [48] * 6)
    for a, b in zip(w2, w1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_all_reduce_and_its_gradient(two_cpus):
    strategy = tf.distribute.MirroredStrategy()
    w = tf.Variable(2.0)

    def replica_fn():
        ctx = tf.distribute.get_replica_context()
        x = tf.cast(ctx.replica_id_in_sync_group, tf.float32) + 1.0  # 1, then 2
        with tf.GradientTape() as tape:
            total = ctx.all_reduce("SUM", w * x)
        return total, tape.gradient(total, w)

    total, grad = strategy.run(replica_fn)
    assert [float(t) for t in strategy.experimental_local_results(total)] == [6.0, 6.0]
    # each replica's gradient is the sum of the upstream gradients (2) times its own x
    assert [float(g) for g in grad.values] == [2.0, 4.0]


def test_mismatched_replicas_and_a_replica_error_are_reported(two_cpus):
    strategy = tf.distribute.MirroredStrategy()

    def uneven():
        ctx = tf.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == 0:
            ctx.all_reduce("SUM", tf.constant(1.0))

    with pytest.raises(RuntimeError, match=r"replica\(s\) \[1\] finished while replica\(s\) "
                                           r"\[0\] waited"):
        strategy.run(uneven)

    def fails():
        if tf.distribute.get_replica_context().replica_id_in_sync_group == 1:
            raise KeyError("replica 1 failed")

    with pytest.raises(KeyError, match="replica 1 failed"):
        strategy.run(fails)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not distinct devices"):
        tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])


def test_the_guides_setup_in_a_fresh_process():
    """As TensorFlow's guides do: split the CPU, then MirroredStrategy() finds two replicas."""
    code = ("import tapeflow as tf\n"
            "cpu = tf.config.list_physical_devices('CPU')\n"
            "tf.config.set_logical_device_configuration(cpu[0], "
            "[tf.config.LogicalDeviceConfiguration()] * 2)\n"
            "s = tf.distribute.MirroredStrategy()\n"
            "print(s.num_replicas_in_sync, len(tf.config.list_logical_devices('CPU')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "2"]
