"""tf.data.experimental.service on a local Ray cluster: a dispatcher and data workers as Ray
actors feeding this process (the trainer). One cluster per module (Ray takes seconds to
start); the kill test makes its own dispatcher and workers. Functions the pipelines call are
defined inside the tests, so Ray pickles them by value for the workers."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors

service = tf.data.experimental.service


# ---- argument checks (no Ray needed) ------------------------------------------------------
def test_processing_mode_and_unsupported_arguments_are_named():
    with pytest.raises(errors.InvalidArgumentError, match="processing_mode"):
        service.distribute("epochs", "grpc://localhost:1")
    with pytest.raises(errors.UnimplementedError, match="FILE"):
        service.distribute(service.ShardingPolicy.FILE, "grpc://localhost:1")
    with pytest.raises(errors.UnimplementedError, match="consumer_index"):
        service.distribute("parallel_epochs", "grpc://localhost:1", consumer_index=0,
                           num_consumers=2)
    assert service.distribute(service.ShardingPolicy.DYNAMIC, "localhost:1") is not None


def test_distributed_epoch_refuses_pipelines_it_cannot_split_or_replay():
    two_sources = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(3)))
    with pytest.raises(errors.InvalidArgumentError, match="exactly one source.*found 2"):
        two_sources.apply(service.distribute("distributed_epoch", "grpc://localhost:1"))
    gen = tf.data.Dataset.from_generator(lambda: iter([1, 2]), output_types=tf.int64)
    with pytest.raises(errors.InvalidArgumentError, match="GeneratorDataset"):
        gen.apply(service.distribute("distributed_epoch", "grpc://localhost:1"))
    racy = tf.data.Dataset.range(3).map(lambda x: x, num_parallel_calls=2,
                                        deterministic=False)
    with pytest.raises(errors.InvalidArgumentError, match="deterministic=False"):
        racy.apply(service.distribute("distributed_epoch", "grpc://localhost:1"))
    # parallel_epochs splits nothing and replays nothing: both are fine there
    two_sources.apply(service.distribute("parallel_epochs", "grpc://localhost:1"))


def test_splits_cover_the_source_once_and_leave_probing_alone():
    from tapeflow.data.iterator import IterContext
    from tapeflow.data.service import splits

    ds = tf.data.Dataset.from_tensor_slices(np.arange(10)).map(lambda x: x * 10).batch(3)
    splits.install(ds)
    assert [int(v) for v in np.concatenate(list(ds.as_numpy_iterator()))] == \
        list(range(0, 100, 10))   # no provider: the whole source, as before

    class Provider:
        def __init__(self):
            self.passes = 0

        def next_pass(self):
            self.passes += 1
            return self.passes - 1

        def get(self, epoch, index):
            return [(7, 10), (0, 2)][index] if index < 2 else None

    ctx = IterContext(ds.options(), splits=Provider())
    got = [b.tolist() for b in ds._iterate(ctx)]
    assert got == [[70, 80, 90], [0, 10]]


# ---- on a Ray cluster ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    dispatcher = service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address))
               for _ in range(2)]
    yield dispatcher, workers
    for w in workers:
        w.stop()
    dispatcher.stop()
    if ray.is_initialized():
        ray.shutdown()


def test_parallel_epochs_distributed_epoch_and_dataset_ids(cluster):
    dispatcher, workers = cluster
    assert dispatcher.target.startswith("grpc://localhost:")
    assert dispatcher._num_workers() == 2
    ds = tf.data.Dataset.range(40).map(lambda x: x * 3)
    whole = list(range(0, 120, 3))

    every = ds.apply(service.distribute("parallel_epochs", dispatcher.target))
    assert sorted(int(x) for x in every) == sorted(whole * 2)    # each worker: the whole set
    split = ds.apply(service.distribute("distributed_epoch", dispatcher.target))
    assert sorted(int(x) for x in split) == whole                 # once across the workers
    assert sorted(int(x) for x in split) == whole                 # a new job per iteration

    ds_id = service.register_dataset(dispatcher.target, ds)
    assert ds_id.dtype == tf.string
    assert service.register_dataset(dispatcher.target, ds).numpy() == ds_id.numpy()
    by_id = service.from_dataset_id("distributed_epoch", dispatcher.target, ds_id)
    assert by_id.element_spec == ds.element_spec                  # asked of the dispatcher
    assert sorted(int(x) for x in by_id) == whole

    # a repeat: each pass over the source is split anew (every element once per pass)
    twice = tf.data.Dataset.range(30).repeat(2).batch(4)
    got = np.concatenate(list(twice.apply(service.distribute(
        "distributed_epoch", dispatcher.target)).as_numpy_iterator()))
    assert sorted(got.tolist()) == sorted(list(range(30)) * 2)


def test_trainers_sharing_a_job_get_each_element_once(cluster):
    """Two trainers (two iterators here) name the same job: distributed_epoch splits the
    elements between them, each element to one of them, none lost."""
    dispatcher, _ = cluster
    ds = tf.data.Dataset.range(300).map(lambda x: x + 1000)
    shared = ds.apply(service.distribute("distributed_epoch", dispatcher.target,
                                         job_name="shared", max_outstanding_requests=4))
    first, second = iter(shared), iter(shared)
    got: list = [[], []]
    live = [first, second]
    while live:   # take turns, one element each, until both are done
        for k, it in enumerate((first, second)):
            if it in live:
                try:
                    got[k].append(int(next(it)))
                except StopIteration:
                    live.remove(it)
    assert sorted(got[0] + got[1]) == list(range(1000, 1300))
    assert got[0] and got[1]


def test_worker_errors_reach_the_trainer(cluster):
    dispatcher, _ = cluster

    def check(x):
        return tf.debugging.assert_less(x, tf.constant(5, tf.int64), message="too big") or x

    ds = tf.data.Dataset.range(8).map(check)
    with pytest.raises(errors.InvalidArgumentError, match="too big"):
        list(ds.apply(service.distribute("parallel_epochs", dispatcher.target)))


def test_distributed_epoch_exactly_once_when_a_worker_is_killed(cluster):
    """Two data workers feed one trainer; one is killed mid-epoch (SIGKILL). Its stream is
    replayed on the other worker: every element arrives exactly once. The pipeline shuffles
    without a seed and batches, so the replay must reproduce the lost worker's draws.
    (Last in the module: it leaves the cluster one worker short.)"""
    import time

    dispatcher, workers = cluster

    def slow(x):
        time.sleep(0.002)
        return x

    n = 1200
    ds = (tf.data.Dataset.range(n).shuffle(64)
          .map(lambda x: tf.py_function(slow, [x], tf.int64)).batch(4))
    it = iter(ds.apply(service.distribute("distributed_epoch", dispatcher.target)))
    got = [next(it).numpy() for _ in range(40)]
    victim = workers[1]._pid()
    os.kill(victim, signal.SIGKILL)
    got += [b.numpy() for b in it]
    values = np.concatenate(got)
    assert len(values) == n and sorted(values.tolist()) == list(range(n))
    assert dispatcher._num_workers() == 1    # the dispatcher saw the death and moved on
