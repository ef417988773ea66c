"""The ``tapeflow`` command: ``tapeflow train [densenet|revnet|cnn|mlp]``.

Trains a zoo model on the built-in MNIST subset (4,000 training / 1,000 held-out digits) with
``model.fit`` in graph mode (Keras's progress bar), reports held-out accuracy, saves a
checkpoint and prints how long one training step takes eagerly and as a graph.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.framework.threads import single_threaded_blas

# default hyper-parameters per model: (epochs, batch size, learning rate)
DEFAULTS = {
    "densenet": (10, 64, 3e-3),
    "revnet": (6, 64, 3e-3),
    "cnn": (6, 128, 1e-3),
    "mlp": (10, 64, 3e-3),
}


def _build(name: str) -> tuple[Any, bool]:
    """(model, whether it outputs logits) for a zoo name, sized for 28x28x1 digits."""
    from tapeflow import models

    if name == "densenet":
        return models.DenseNet(input_shape=(28, 28, 1), growth_rate=12, num_blocks=3,
                               layers_per_block=4, initial_filters=16, bn_momentum=0.9,
                               stem_strides=2), True
    if name == "revnet":
        return models.RevNet(num_classes=10, filters=16, num_blocks=3, bn_momentum=0.9), True
    if name == "cnn":
        return models.CifarCNN(input_shape=(28, 28, 1)), False
    return models.MLP(input_shape=(28, 28, 1)), True


def _load_data() -> tuple:
    from tapeflow.datasets import load_mnist_5k

    (x_train, y_train), (x_test, y_test) = load_mnist_5k()

    def prep(x: np.ndarray) -> np.ndarray:
        return (x.astype(np.float32) / 255.0)[..., None]

    return (prep(x_train), y_train.astype(np.int64)), (prep(x_test), y_test.astype(np.int64))


def _median_step_seconds(step: Callable, x: Any, y: Any, repeats: int = 9) -> float:
    step(x, y)  # warm-up (traces the graph once)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step(x, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _step_times(tf: Any, model: Any, loss_fn: Any, optimizer: Any, x: Any, y: Any) -> tuple:
    """Median seconds of one training step run eagerly and as a traced graph."""

    def train_step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    x, y = tf.constant(x), tf.constant(y)
    # one BLAS thread, as fit runs its steps: two threads stall on small products on 2 cores
    timed = single_threaded_blas(_median_step_seconds)
    return timed(train_step, x, y), timed(tf.function(train_step), x, y)


def _save(checkpoint: Any, directory: str, keep: int = 5) -> str:
    """Save as ``ckpt-N``, N one more than the newest earlier run's, keeping the newest `keep`."""
    from tapeflow.train import CheckpointManager

    manager = CheckpointManager(checkpoint, directory, max_to_keep=keep)
    latest = manager.latest_checkpoint
    number = int(latest.rsplit("-", 1)[1]) + 1 if latest else 1
    return manager.save(checkpoint_number=number)


def train(args: argparse.Namespace) -> int:
    import tapeflow as tf
    from tapeflow import keras
    from tapeflow.keras.mixed_precision.policy import policy_scope
    from tapeflow.train import Checkpoint

    epochs, batch_size, learning_rate = DEFAULTS[args.model]
    epochs = args.epochs or epochs
    batch_size = args.batch_size or batch_size
    learning_rate = args.learning_rate or learning_rate
    tf.random.set_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = _load_data()
    with policy_scope(args.dtype_policy):  # layers take the policy when they are made
        model, logits = _build(args.model)
        if args.dtype_policy != "float32":  # the Keras guide's float32 output layer
            model = keras.Sequential([model, keras.layers.Activation("linear", dtype="float32")],
                                     name=model.name)
        model(x_train[:1])  # builds subclassed models too, so the parameter count is known
    # cosine decay to zero: the last epochs settle the weights, and with them the batch-norm
    # moving statistics that inference uses
    steps = epochs * -(-len(x_train) // batch_size)
    optimizer = keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(learning_rate, steps))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=logits)
    model.compile(optimizer=optimizer, loss=loss_fn, metrics=["accuracy"],
                  run_eagerly=args.eager)
    mode = "eager" if args.eager else "graph"
    print(f"tapeflow train {args.model} ({model.count_params():,} parameters): "
          f"{len(x_train)} training / {len(x_test)} held-out MNIST digits, "
          f"{epochs} epoch{'' if epochs == 1 else 's'}, "
          f"batch {batch_size}, Adam({learning_rate}, cosine decay), {mode} mode, "
          f"{args.dtype_policy}")
    callbacks = _tensorboard(keras, args.logdir, args.profile_batch)
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs,
              validation_data=(x_test, y_test), verbose=1, callbacks=callbacks)
    elapsed = time.perf_counter() - start
    _, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    print(f"held-out accuracy: {accuracy:.4f} ({len(x_test)} digits); training took "
          f"{elapsed:.1f} s")
    path = _save(Checkpoint(model=model, optimizer=optimizer),
                 os.path.join(args.checkpoint_dir, args.model))
    print(f"checkpoint saved: {path}")
    eager_s, graph_s = _step_times(tf, model, loss_fn, optimizer, x_train[:batch_size],
                                   y_train[:batch_size])
    print(f"training step (batch {batch_size}): eager {eager_s * 1e3:.1f} ms, graph "
          f"{graph_s * 1e3:.1f} ms ({eager_s / graph_s:.2f}x faster as a graph)")
    if callbacks:
        profiled = (f", compute time and memory of batch {args.profile_batch}"
                    if args.profile_batch else "")
        print(f"TensorBoard logs (curves, weight histograms, the train step's graph"
              f"{profiled}): tensorboard --logdir {args.logdir}")
    return 0


_DESCRIPTION = """\
Train a model from tapeflow's zoo on the built-in MNIST subset (4,000 training and 1,000
held-out digits, no network needed) with model.fit in graph mode, report the held-out
accuracy, save a checkpoint and time one training step eagerly and as a graph."""


def _models_table() -> str:
    rows = [f"  {name:<9} {e:>6} {b:>10} {lr:>13g}{'   (default)' if name == 'densenet' else ''}"
            for name, (e, b, lr) in DEFAULTS.items()]
    return "models and their defaults:\n  model     epochs batch size learning rate\n" + \
        "\n".join(rows)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _learning_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text}")
    return value


def _writable_dir(text: str) -> str:
    """A directory we can write into (created now): checked before training starts."""
    try:
        os.makedirs(text, exist_ok=True)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot create {text!r}: {e.strerror or e}") from None
    if not os.path.isdir(text) or not os.access(text, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not a writable directory")
    return text


def _tensorboard(keras: Any, logdir: str, profile_batch: int = 0) -> list:
    """The TensorBoard callback for `logdir` ('' turns logging off; so does a missing
    tensorboard package, with a note); `profile_batch` > 0 profiles that batch."""
    if not logdir:
        return []
    try:
        return [keras.callbacks.TensorBoard(logdir, histogram_freq=1, write_graph=True,
                                            profile_batch=profile_batch)]
    except ImportError as e:
        print(f"no TensorBoard logs: {e}")
        return []


def export(args: argparse.Namespace) -> int:
    """``tapeflow export MODEL --format onnx``: a saved model file (or a zoo model, untrained)
    as ONNX, traced for its own input shapes with an unknown batch."""
    import tapeflow as tf
    from tapeflow import onnx as tf_onnx

    if args.model in DEFAULTS and not os.path.exists(args.model):
        model, _ = _build(args.model)
        specs = [tf.TensorSpec((None, 28, 28, 1))]  # the zoo is sized for MNIST digits
    else:
        model = tf.keras.models.load_model(args.model, compile=False)
        specs = [tf.TensorSpec(x.shape.as_list(), x.dtype) for x in model.inputs]
    out = args.output or os.path.splitext(os.path.basename(args.model.rstrip("/")))[0] + ".onnx"
    proto = tf_onnx.export(model, specs, out)
    print(f"exported {args.model} to {out} (ONNX opset {proto.opset_import[0].version}, "
          f"{len(proto.graph.node)} nodes, checked with onnx.checker)")
    return 0


def _parser() -> argparse.ArgumentParser:
    from tapeflow.version import TAPEFLOW_VERSION, VERSION

    parser = argparse.ArgumentParser(prog="tapeflow", description=_DESCRIPTION)
    parser.add_argument("--version", action="version",
                        version=f"tapeflow {TAPEFLOW_VERSION} (TensorFlow {VERSION} API)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    t = commands.add_parser("train", help="train a zoo model on the built-in MNIST subset",
                            description=_DESCRIPTION, epilog=_models_table(),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("model", nargs="?", default="densenet", choices=list(DEFAULTS),
                   help="which model to train (default: densenet)")
    t.add_argument("--epochs", type=_positive_int, default=None,
                   help="passes over the training set (default: per model, below)")
    t.add_argument("--batch-size", type=_positive_int, default=None,
                   help="examples per step (default: per model, below)")
    t.add_argument("--learning-rate", type=_learning_rate, default=None,
                   help="Adam's initial learning rate, in (0, 1], decayed to zero by a cosine "
                        "schedule (default: per model, below)")
    t.add_argument("--eager", action="store_true", help="run fit eagerly (no graph)")
    t.add_argument("--dtype-policy", default="float32",
                   choices=["float32", "mixed_float16", "mixed_bfloat16"],
                   help="tf.keras.mixed_precision policy (default: float32)")
    t.add_argument("--seed", type=int, default=0, help="tf.random.set_seed value (default: 0)")
    t.add_argument("--checkpoint-dir", type=_writable_dir, default="checkpoints",
                   help="where the trained weights are saved, as MODEL/ckpt-N with N one more "
                        "than the last run's (default: ./checkpoints)")
    t.add_argument("--logdir", default="logs",
                   help="TensorBoard logs (curves, histograms, the train step's graph); "
                        "'' for none (default: ./logs)")
    t.add_argument("--profile-batch", type=int, default=0, metavar="N",
                   help="profile training batch N: per-node compute time and memory for the "
                        "Graphs dashboard (tag batch_N) and a trace for the profile plugin "
                        "(default: 0, none)")
    t.add_argument("--workers", type=_positive_int, default=1,
                   help="train on N processes: MultiWorkerMirroredStrategy under mpiexec, or "
                        "the parameter-server workers (default: 1; see docs/distribute.md)")
    t.add_argument("--strategy", default=None, choices=["multi-worker", "parameter-server"],
                   help="multi-worker (synchronous, MPI; the default with --workers) or "
                        "parameter-server (asynchronous, local Ray cluster)")
    e = commands.add_parser("export", help="export a saved model (or a zoo model) to ONNX")
    e.add_argument("model", help="a .keras/.h5 file, a SavedModel directory or a zoo name")
    e.add_argument("--format", default="onnx", choices=["onnx"])
    e.add_argument("-o", "--output", default=None, help="default: <model name>.onnx")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tapeflow`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "export":
        return export(args)
    if args.workers > 1 or args.strategy:  # the distributed forms of the job
        from tapeflow.distribute import cli_train

        return cli_train.main(args, sys.argv[1:] if argv is None else argv)
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
