"""W5: seed 004's CIFAR CNN trained with ``model.fit``, tapeflow side by side with PyTorch eager.

Both run the same training loop on random data of CIFAR's shape (CIFAR is not on disk): batch
256, shuffled, RMSprop (lr 1e-4, rho 0.9), categorical cross-entropy, accuracy computed per
batch. Throughput is the median over timed epochs after a warm-up epoch (tapeflow's warm-up
traces the train step); each run's epoch times are printed as min / median / p90. A second
tapeflow row calls the traced train step directly on the same batches, so the gap between the
two is what ``fit``'s Python loop (batching, callbacks, logs) costs. The runs are interleaved
epoch by epoch so that load from other processes on a shared machine affects them alike; the
load average is printed with the results.

    python benchmarks/bench_fit.py                  # 1,024 images x 3 timed epochs
    python benchmarks/bench_fit.py --eager          # also tapeflow with run_eagerly=True
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread_text  # noqa: E402

# TensorFlow's throughput for this workload as quoted in issue 5 (another machine): a reference,
# NOT measured by this script. `bench_models.py --only w5 --tf-python ...` runs TF side by side.
TF_REFERENCE_IMG_S = 984.0
BATCH = 256


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.random((n, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, size=n)]
    return x, y


class TapeflowRun:
    """Seed 004's CNN compiled as in the seed; one timed epoch per call."""

    def __init__(self, x: np.ndarray, y: np.ndarray, eager: bool):
        import tapeflow as tf
        from tapeflow.models import CifarCNN

        tf.random.set_seed(0)
        self.x, self.y = x, y
        self.model = CifarCNN()
        self.model.compile(loss="categorical_crossentropy",
                           optimizer=tf.keras.optimizers.RMSprop(learning_rate=1e-4, rho=0.9),
                           metrics=["accuracy"], run_eagerly=eager)
        start = time.perf_counter()
        self.model.fit(x[:2 * BATCH], y[:2 * BATCH], batch_size=BATCH, epochs=1, verbose=0)
        self.warmup_s = time.perf_counter() - start
        self.batches = [(tf.constant(x[i:i + BATCH]), tf.constant(y[i:i + BATCH]))
                        for i in range(0, len(x), BATCH)]

    def fit_epoch(self) -> float:
        start = time.perf_counter()
        self.model.fit(self.x, self.y, batch_size=BATCH, epochs=1, shuffle=True, verbose=0)
        return time.perf_counter() - start

    def step_epoch(self) -> float:
        """The traced train step alone on prepared batches: what the fit loop adds is the rest."""
        step = self.model.make_train_function()
        start = time.perf_counter()
        for batch in self.batches:
            step(batch)
        return time.perf_counter() - start


class TorchRun:
    """The same network, optimizer and loop in PyTorch eager (NCHW)."""

    def __init__(self, x_np: np.ndarray, y_np: np.ndarray):
        import torch

        self.torch = torch
        nn = torch.nn
        torch.manual_seed(0)
        self.model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
            nn.MaxPool2d(2), nn.Dropout(0.25), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
            nn.Conv2d(64, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
            nn.Linear(2304, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10))
        self.optimizer = torch.optim.RMSprop(self.model.parameters(), lr=1e-4, alpha=0.9,
                                             eps=1e-7)
        self.x = torch.from_numpy(x_np.transpose(0, 3, 1, 2).copy())
        self.y = torch.from_numpy(y_np.argmax(axis=1))
        self.epoch(min(2 * BATCH, len(self.x)))

    def epoch(self, n: int | None = None) -> float:
        torch, nn = self.torch, self.torch.nn
        n = n or len(self.x)
        start = time.perf_counter()
        perm = torch.randperm(n)
        correct = 0
        for i in range(0, n, BATCH):
            idx = perm[i:i + BATCH]
            self.optimizer.zero_grad()
            logits = self.model(self.x[idx])
            loss = nn.functional.cross_entropy(logits, self.y[idx])
            loss.backward()
            self.optimizer.step()
            correct += int((logits.argmax(1) == self.y[idx]).sum())
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4 * BATCH, help="images per epoch")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs (median)")
    parser.add_argument("--eager", action="store_true", help="also time run_eagerly=True")
    args = parser.parse_args()
    x, y = _data(args.images)

    torch_run, graph = TorchRun(x, y), TapeflowRun(x, y, eager=False)
    runs = {"torch eager loop": torch_run.epoch, "tapeflow fit (graph)": graph.fit_epoch,
            "tapeflow step only": graph.step_epoch}
    if args.eager:
        runs["tapeflow fit (eager)"] = TapeflowRun(x, y, eager=True).fit_epoch
    # rounds interleave the runs, so a busy machine slows them alike
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.epochs):
        for name, run in runs.items():
            times[name].append(run())
    img_s = {name: len(x) / statistics.median(t) for name, t in times.items()}

    print(f"W5 seed-004 CIFAR CNN training, batch {BATCH}, RMSprop, {args.images} images/epoch, "
          f"median of {args.epochs} interleaved epochs; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"  {'run':22s} {'img/s':>8s} {'vs torch':>9s} {'vs TF':>7s}  epoch s min/median/p90")
    for name, value in img_s.items():
        print(f"  {name:22s} {value:8.0f} {value / img_s['torch eager loop']:8.2f}x "
              f"{value / TF_REFERENCE_IMG_S:6.2f}x  {spread_text(times[name], digits=3)}")
    print(f"  TF reference: {TF_REFERENCE_IMG_S:.0f} img/s (quoted in issue 5, not measured here)")
    traces = graph.model.make_train_function().experimental_get_tracing_count()
    print(f"  tapeflow warm-up fit (trace + 2 steps): {graph.warmup_s:.1f} s; train step traced "
          f"{traces} time(s)")


if __name__ == "__main__":
    main()
