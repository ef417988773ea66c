"""The ``tapeflow`` command: ``tapeflow train [densenet|revnet|cnn|mlp]``.

Trains a zoo model on the built-in MNIST subset (4,000 training / 1,000 held-out digits) with
``model.fit`` in graph mode (Keras's progress bar), reports held-out accuracy, saves a
checkpoint and prints how long one training step takes eagerly and as a graph.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.kernels.blas import single_threaded

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
    timed = single_threaded(_median_step_seconds)
    return timed(train_step, x, y), timed(tf.function(train_step), x, y)


def train(args: argparse.Namespace) -> int:
    import tapeflow as tf
    from tapeflow import keras
    from tapeflow.train import Checkpoint

    epochs, batch_size, learning_rate = DEFAULTS[args.model]
    epochs = args.epochs or epochs
    batch_size = args.batch_size or batch_size
    learning_rate = args.learning_rate or learning_rate
    tf.random.set_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = _load_data()
    model, logits = _build(args.model)
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
          f"{len(x_train)} training / {len(x_test)} held-out MNIST digits, {epochs} epochs, "
          f"batch {batch_size}, Adam({learning_rate}, cosine decay), {mode} mode")
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs,
              validation_data=(x_test, y_test), verbose=1)
    elapsed = time.perf_counter() - start
    _, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    print(f"held-out accuracy: {accuracy:.4f} ({len(x_test)} digits); training took "
          f"{elapsed:.1f} s")
    prefix = os.path.join(args.checkpoint_dir, args.model, "ckpt")
    path = Checkpoint(model=model, optimizer=optimizer).save(prefix)
    print(f"checkpoint saved: {path}")
    eager_s, graph_s = _step_times(tf, model, loss_fn, optimizer, x_train[:batch_size],
                                   y_train[:batch_size])
    print(f"training step (batch {batch_size}): eager {eager_s * 1e3:.1f} ms, graph "
          f"{graph_s * 1e3:.1f} ms ({eager_s / graph_s:.2f}x faster as a graph)")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tapeflow", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("train", help="train a zoo model on the built-in MNIST subset")
    t.add_argument("model", nargs="?", default="densenet", choices=sorted(DEFAULTS))
    t.add_argument("--epochs", type=int, default=None, help="default: per model")
    t.add_argument("--batch-size", type=int, default=None, help="default: per model")
    t.add_argument("--learning-rate", type=float, default=None, help="Adam learning rate")
    t.add_argument("--eager", action="store_true", help="run fit eagerly (no graph)")
    t.add_argument("--seed", type=int, default=0, help="tf.random.set_seed value")
    t.add_argument("--checkpoint-dir", default="checkpoints",
                   help="where the trained weights are saved (default: ./checkpoints)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tapeflow`` console script."""
    args = _parser().parse_args(argv)
    for name in ("epochs", "batch_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            _parser().error(f"--{name.replace('_', '-')} must be a positive integer")
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
