"""tf.distribute, single process: scopes, run/reduce, datasets, and a custom training loop."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import distribute
from tapeflow.framework import errors
from tapeflow.keras import optimizers


def test_default_strategy_and_scopes_nest():
    default = distribute.get_strategy()
    assert not distribute.has_strategy() and default.num_replicas_in_sync == 1
    assert distribute.get_replica_context() is not None
    strategy = distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 1
    with strategy.scope() as s:
        assert s is strategy and distribute.get_strategy() is strategy
        assert distribute.has_strategy() and distribute.in_cross_replica_context()
        assert distribute.get_replica_context() is None
        inner = distribute.OneDeviceStrategy("/cpu:0")
        with inner.scope():
            assert distribute.get_strategy() is inner
        assert distribute.get_strategy() is strategy
    assert distribute.get_strategy() is default


def test_more_devices_than_this_process_drives_is_an_error():
    with pytest.raises(errors.InvalidArgumentError, match="2 devices requested"):
        distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])


def test_run_and_reduce():
    strategy = distribute.MirroredStrategy()

    def replica_fn(x):
        ctx = distribute.get_replica_context()
        assert ctx.replica_id_in_sync_group == 0 and not distribute.in_cross_replica_context()
        return ctx.all_reduce("sum", x * 2.0)

    out = strategy.run(replica_fn, args=(tf.constant([1.0, 2.0, 3.0]),))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(strategy.reduce(distribute.ReduceOp.SUM, out, axis=None).numpy(),
                               [2.0, 4.0, 6.0])
    assert float(strategy.reduce("SUM", out, axis=0).numpy()) == 12.0
    assert float(strategy.reduce("mean", out, axis=0).numpy()) == 4.0
    assert strategy.experimental_local_results(out) == (out,)
    with pytest.raises(ValueError, match="reduce_op must be"):
        strategy.reduce("MAX", out, axis=None)


def test_datasets_from_function_gets_an_input_context():
    strategy = distribute.MirroredStrategy()
    seen = []

    def dataset_fn(ctx):
        seen.append(ctx)
        return [ctx.get_per_replica_batch_size(64)]

    assert strategy.distribute_datasets_from_function(dataset_fn) == [64]
    assert seen[0].num_replicas_in_sync == 1 and seen[0].input_pipeline_id == 0


def test_custom_training_loop_in_scope_matches_plain_loop():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 32, 8)]

    def train(strategy):
        with strategy.scope():
            w = tf.Variable(np.zeros((3, 1), np.float32))
            b = tf.Variable(np.zeros((1,), np.float32))
            opt = optimizers.SGD(0.1, momentum=0.5)
        global_batch = 8 * strategy.num_replicas_in_sync

        def step(xb, yb):
            with tf.GradientTape() as tape:
                err = tf.matmul(xb, w) + b - yb
                loss = tf.reduce_sum(err * err) / float(global_batch)
            grads = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(grads, [w, b]))
            return loss

        losses = []
        for _ in range(5):
            for xb, yb in strategy.experimental_distribute_dataset(batches):
                per_replica = strategy.run(step, args=(tf.constant(xb), tf.constant(yb)))
                losses.append(float(strategy.reduce("SUM", per_replica, axis=None).numpy()))
        return w.numpy(), losses

    w_mirrored, losses = train(distribute.MirroredStrategy())
    w_plain, plain_losses = train(distribute.get_strategy())
    np.testing.assert_array_equal(w_mirrored, w_plain)
    assert losses == plain_losses
    assert losses[-1] < 0.05 * losses[0]
