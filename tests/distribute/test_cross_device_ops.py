"""tf.distribute's cross-device ops, input/run options and experimental_set_strategy: TF
programs that choose them run unchanged, and the chosen reduction is the one used."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import config

X = np.random.default_rng(1).normal(size=(32, 4)).astype(np.float32)
Y = (X @ np.arange(1.0, 5.0, dtype=np.float32))[:, None]


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setitem(config._settings, "logical",
                        [tf.config.LogicalDeviceConfiguration()] * 2)


def _train(strategy):
    with strategy.scope():
        tf.random.set_seed(0)
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
        model.compile(tf.keras.optimizers.SGD(0.05), "mse")
    model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return model.get_weights()


@pytest.mark.parametrize("kind", [tf.distribute.HierarchicalCopyAllReduce(num_packs=2),
                                  tf.distribute.NcclAllReduce(),
                                  tf.distribute.ReductionToOneDevice()])
def test_every_kind_trains_as_the_default_reduction(two_cpus, kind):
    chosen = _train(tf.distribute.MirroredStrategy(cross_device_ops=kind))
    default = _train(tf.distribute.MirroredStrategy())
    for a, b in zip(chosen, default):
        np.testing.assert_array_equal(a, b)


def test_accumulation_fn_is_the_one_used(two_cpus):
    calls = []

    def add_n(values):
        calls.append(len(values))
        return tf.math.add_n(values)

    strategy = tf.distribute.MirroredStrategy(
        cross_device_ops=tf.distribute.ReductionToOneDevice(accumulation_fn=add_n))
    per_replica = strategy.run(lambda: tf.cast(
        tf.distribute.get_replica_context().replica_id_in_sync_group + 1, tf.float32))
    assert isinstance(per_replica, tf.distribute.DistributedValues)
    assert float(strategy.reduce("SUM", per_replica, axis=None)) == 3.0
    assert float(strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)) == 1.5
    assert calls == [2, 2]
    ops = strategy._cross_device_ops
    assert [float(v) for v in ops.batch_reduce("MEAN", [(per_replica, None)] * 2)] == [1.5, 1.5]


def test_bad_arguments_name_what_is_wrong():
    with pytest.raises(TypeError, match="cross_device_ops"):
        tf.distribute.MirroredStrategy(cross_device_ops="nccl")
    with pytest.raises(ValueError, match="num_packs"):
        tf.distribute.HierarchicalCopyAllReduce(num_packs=-1)
    with pytest.raises(TypeError, match="accumulation_fn"):
        tf.distribute.ReductionToOneDevice(accumulation_fn=3)
    with pytest.raises(TypeError, match="replication_mode"):
        tf.distribute.InputOptions(experimental_replication_mode="PER_WORKER")


def test_input_and_run_options_are_accepted():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    options = tf.distribute.InputOptions(
        experimental_replication_mode=tf.distribute.InputReplicationMode.PER_WORKER,
        experimental_fetch_to_device=False)
    batches = strategy.experimental_distribute_dataset(
        tf.data.Dataset.range(6).batch(3), options=options)
    assert [b.numpy().tolist() for b in batches] == [[0, 1, 2], [3, 4, 5]]
    out = strategy.run(lambda: tf.constant(2.0), options=tf.distribute.RunOptions())
    assert float(out) == 2.0


def test_experimental_set_strategy_is_a_scope_without_a_block():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    tf.distribute.experimental_set_strategy(strategy)
    try:
        assert tf.distribute.get_strategy() is strategy and tf.distribute.has_strategy()
        with pytest.raises(RuntimeError, match="scope"):
            with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
                tf.distribute.experimental_set_strategy(None)
        tf.distribute.experimental_set_strategy(strategy)  # replacing it is fine
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert not tf.distribute.has_strategy()
