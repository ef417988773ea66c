"""Run under `mpiexec -n N` (or alone): trains a small MLP with MultiWorkerMirroredStrategy and
writes what the tests compare to OUT (an .npz, from the chief).

usage: mwms_train.py OUT {fit,loop,eager,backup} {sgd,adam} GLOBAL_BATCH STEPS [DIE_AT_EPOCH]
environment: MWMS_MODEL=densenet (the zoo's DenseNet with synchronized batch norm instead of the
MLP) or embedding (Embedding + Dense; even batches look up rows 0-9, odd ones rows 10-19),
MWMS_FLOATX=float64, MWMS_PERMUTE=1 (each global batch in reverse order: the same math,
another rounding), MWMS_BYTES_PER_PACK (gradient bucket size).
loop: a custom loop, traced; eager: the same loop run eagerly (buckets all-reduced during the
backward pass: `overlapped` counts the steps whose first bucket was posted before the first
layer's kernel gradient existed).
backup: 4 epochs of fit with BackupAndRestore in OUT.backup; rank 1 exits at DIE_AT_EPOCH.
"""

import functools
import os
import sys

import numpy as np

import tapeflow as tf

out, mode, opt_name, global_batch, steps = sys.argv[1], sys.argv[2], sys.argv[3], \
    int(sys.argv[4]), int(sys.argv[5])
if os.environ.get("MWMS_FLOATX"):
    tf.keras.backend.set_floatx(os.environ["MWMS_FLOATX"])
strategy = tf.distribute.MultiWorkerMirroredStrategy(
    tf.distribute.experimental.CommunicationOptions(
        bytes_per_pack=int(os.environ.get("MWMS_BYTES_PER_PACK", "0"))))
rank = strategy.cluster_resolver.task_id
densenet = os.environ.get("MWMS_MODEL") == "densenet"
rng = np.random.default_rng(0)
x = rng.normal(size=(global_batch * steps, 12)).astype(np.float32)
y = np.tanh(x @ rng.normal(size=(12, 3))).astype(np.float32)
if densenet:  # the model zoo's DenseNet, small, with batch statistics over the global batch
    x = rng.normal(size=(global_batch * steps, 8, 8, 3)).astype(np.float32)
    tf.keras.layers.BatchNormalization = functools.partial(tf.keras.layers.BatchNormalization,
                                                           synchronized=True)


if os.environ.get("MWMS_MODEL") == "embedding":
    batch_of = np.arange(len(x)) // global_batch
    x = (rng.integers(0, 10, size=(len(x), 3)) + 10 * (batch_of % 2)[:, None]).astype(np.int32)


def make_optimizer():
    if opt_name == "sgd":
        return tf.keras.optimizers.SGD(0.1, momentum=0.9)
    if opt_name == "legacy_sgd":  # its sparse rule leaves rows not looked up alone
        return tf.keras.optimizers.legacy.SGD(0.1, momentum=0.9)
    return tf.keras.optimizers.Adam(0.01)


with strategy.scope():
    tf.random.set_seed(100 + rank)  # a different draw on each rank: the broadcast must fix it
    model = tf.keras.Sequential([tf.keras.layers.Dense(32, activation="relu", input_shape=(12,)),
                                 tf.keras.layers.Dense(3)])
    if os.environ.get("MWMS_MODEL") == "embedding":
        model = tf.keras.Sequential([tf.keras.layers.Embedding(20, 4, input_length=3),
                                     tf.keras.layers.Flatten(), tf.keras.layers.Dense(3)])
    if densenet:
        from tapeflow.models import DenseNet

        model = DenseNet((8, 8, 3), 3, growth_rate=4, num_blocks=2,
                                   layers_per_block=2, initial_filters=8)
    model.compile(optimizer=make_optimizer(), loss="mse", metrics=["mae"])

if os.environ.get("MWMS_PERMUTE") == "1":  # reverse each global batch (same math)
    order = np.concatenate([np.arange(i + global_batch - 1, i - 1, -1)
                            for i in range(0, len(x), global_batch)])
    x, y = x[order], y[order]
results = {}
if mode == "backup":
    die_at = int(sys.argv[6]) if len(sys.argv) > 6 else -1

    def maybe_die(epoch, logs=None):
        if epoch == die_at and strategy.worker_index == strategy.num_replicas_in_sync - 1:
            os._exit(3)  # a worker dies: under mpiexec the whole job goes down

    epochs_run = []
    model.fit(x, y, batch_size=global_batch, epochs=4, shuffle=False, verbose=0, callbacks=[
        tf.keras.callbacks.BackupAndRestore(out + ".backup"),
        tf.keras.callbacks.LambdaCallback(on_epoch_begin=maybe_die),
        tf.keras.callbacks.LambdaCallback(
            on_epoch_begin=lambda e, logs=None: epochs_run.append(e))])
    results["epochs_run"] = np.array(epochs_run)
elif mode == "fit":
    log = tf.keras.callbacks.CSVLogger(f"{out}.rank{rank}.csv")  # written by the chief only
    history = model.fit(x, y, batch_size=global_batch, epochs=1, shuffle=False, verbose=0,
                        callbacks=[log])
    results["loss"] = np.array(history.history["loss"])
    results["mae"] = np.array(history.history["mae"])
else:
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    optimizer = model.optimizer

    def step(xb, yb):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(xb) - yb), axis=1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    run_step = tf.function(lambda xb, yb: strategy.run(step, args=(xb, yb)))
    events: list = []
    sparse_updates = [0]  # updates the optimizer applied from rows (an IndexedSlices)
    update_sparse = optimizer._update_sparse

    def counted(*args, **kwargs):
        sparse_updates[0] += 1
        return update_sparse(*args, **kwargs)

    optimizer._update_sparse = counted
    if mode == "eager":
        run_step = lambda xb, yb: strategy.run(step, args=(xb, yb))  # noqa: E731
        from tapeflow.distribute import collective_ops

        ready = collective_ops.EagerBuckets.ready
        post = strategy.communicator.iallreduce

        def logged_ready(self, i, grad):
            events.append(("final", i))
            ready(self, i, grad)

        def logged_post(*args, **kwargs):
            events.append(("post",))
            return post(*args, **kwargs)

        collective_ops.EagerBuckets.ready = logged_ready
        strategy.communicator.iallreduce = logged_post
    losses, overlapped = [], 0
    for xb, yb in strategy.experimental_distribute_dataset(dataset):
        events.clear()
        loss = run_step(xb, yb)
        if ("final", 0) in events and ("post",) in events:
            overlapped += events.index(("post",)) < events.index(("final", 0))
        losses.append(strategy.reduce("SUM", loss, axis=None).numpy())
    results["loss"] = np.array(losses)
    results["overlapped"] = np.array(overlapped)
    results["sparse_updates"] = np.array(sparse_updates[0])
    results["gathered"] = strategy.gather(tf.constant([[float(rank)] * 2]), axis=0).numpy()
    results["mean_axis"] = strategy.reduce("MEAN", tf.constant([rank, rank + 2.0]), axis=0).numpy()
for i, w in enumerate(model.get_weights()):  # Dense: w0..w3
    results[f"w{i}"] = w
if strategy.is_chief:
    np.savez(out, replicas=strategy.num_replicas_in_sync, **results)
