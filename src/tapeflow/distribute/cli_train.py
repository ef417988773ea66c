"""``tapeflow train --workers N`` (MultiWorkerMirroredStrategy over ``mpiexec -n N``) and
``tapeflow train --strategy parameter-server`` (ParameterServerStrategy on a local Ray cluster):
the main job, distributed, ending with the held-out accuracy as the one-process run does."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import numpy as np


def relaunch_under_mpiexec(args: argparse.Namespace, argv: list[str]) -> int:
    """Start this same command as `args.workers` MPI ranks (one core each, BLAS single)."""
    exe = shutil.which("mpiexec")
    if exe is None:
        print("tapeflow train --workers needs mpiexec: pip install 'tapeflow[mpi]'",
              file=sys.stderr)
        return 2
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = [exe, "-n", str(args.workers), sys.executable, "-m", "tapeflow.cli", *argv]
    return subprocess.call(cmd, env=env)


def train_multi_worker(args: argparse.Namespace, defaults: tuple) -> int:
    """One rank of ``mpiexec -n N tapeflow train --workers N``."""
    import tapeflow as tf
    from tapeflow import keras
    from tapeflow.cli import _build, _load_data

    epochs, batch_size, learning_rate = defaults
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    chief = strategy.is_chief
    tf.random.set_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = _load_data()
    steps = epochs * -(-len(x_train) // batch_size)
    with strategy.scope():
        model, logits = _build(args.model)
        model(x_train[:1])
        optimizer = keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(learning_rate,
                                                                                 steps))
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=logits)
        model.compile(optimizer=optimizer, loss=loss_fn, metrics=["accuracy"],
                      run_eagerly=args.eager)
    n = strategy.num_replicas_in_sync
    if chief:
        print(f"tapeflow train {args.model} on {n} workers (MultiWorkerMirroredStrategy, MPI): "
              f"global batch {batch_size} ({batch_size // n} per worker), {epochs} epochs, "
              f"{len(x_train)} training / {len(x_test)} held-out digits", flush=True)
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, verbose=1 if chief else 0)
    elapsed = time.perf_counter() - start
    _, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    if chief:
        print(f"held-out accuracy: {accuracy:.4f} ({len(x_test)} digits); training took "
              f"{elapsed:.1f} s on {n} workers", flush=True)
    return 0


def train_parameter_server(args: argparse.Namespace, defaults: tuple) -> int:
    """Asynchronous training of the zoo model: 1 parameter server and `args.workers` workers
    (default 2) as Ray actors; the coordinator evaluates the servers' weights."""
    import tapeflow as tf
    from tapeflow import keras
    from tapeflow.cli import _build, _load_data

    epochs, batch_size, learning_rate = defaults
    workers = max(1, args.workers)
    tf.random.set_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = _load_data()
    spec = tf.train.ClusterSpec({"chief": ["localhost:0"],
                                 "worker": [f"localhost:{i + 1}" for i in range(workers)],
                                 "ps": ["localhost:0"]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model, logits = _build(args.model)
        model(x_train[:1])
        optimizer = keras.optimizers.Adam(learning_rate)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=logits)

    def dataset_fn(ctx: Any) -> Any:
        ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds.shuffle(len(x_train), seed=args.seed).repeat().batch(batch_size)

    iterator = iter(coordinator.create_per_worker_dataset(
        lambda: strategy.distribute_datasets_from_function(dataset_fn)))

    @tf.function
    def step_fn(it: Any) -> Any:
        def replica_fn(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        x, y = next(it)
        return strategy.run(replica_fn, args=(x, y))

    steps = epochs * -(-len(x_train) // batch_size)
    print(f"tapeflow train {args.model}: ParameterServerStrategy on Ray, 1 parameter server, "
          f"{workers} workers, {steps} asynchronous steps of batch {batch_size}", flush=True)
    start = time.perf_counter()
    try:
        losses = [coordinator.schedule(step_fn, args=(iterator,)) for _ in range(steps)]
        coordinator.join()
        elapsed = time.perf_counter() - start
        staleness = coordinator.staleness()
    finally:
        coordinator.shutdown()
    first = float(np.mean([v.fetch() for v in losses[:10]]))
    last = float(np.mean([v.fetch() for v in losses[-10:]]))
    model.compile(loss=loss_fn, metrics=["accuracy"])
    _, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    print(f"loss {first:.3f} -> {last:.3f}; staleness: mean {staleness.get('mean', 0):.2f}, "
          f"max {staleness.get('max', 0)} updates behind")
    print(f"held-out accuracy: {accuracy:.4f} ({len(x_test)} digits); training took "
          f"{elapsed:.1f} s ({steps / elapsed:.1f} steps/s)", flush=True)
    return 0


def main(args: argparse.Namespace, argv: list[str]) -> int:
    """Dispatch ``tapeflow train --workers/--strategy``."""
    from tapeflow.cli import DEFAULTS
    from tapeflow.distribute.communicator import launched_by_mpiexec

    epochs, batch_size, learning_rate = DEFAULTS[args.model]
    defaults = (args.epochs or epochs, args.batch_size or batch_size,
                args.learning_rate or learning_rate)
    if args.strategy == "parameter-server":
        return train_parameter_server(args, defaults)
    if not launched_by_mpiexec():
        return relaunch_under_mpiexec(args, argv)
    return train_multi_worker(args, defaults)
