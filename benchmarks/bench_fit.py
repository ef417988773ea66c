"""W5: seed 004's CIFAR CNN trained with ``model.fit``, tapeflow side by side with PyTorch eager.

Both run the same training loop on random data of CIFAR's shape (CIFAR is not on disk): batch
256, shuffled, RMSprop (lr 1e-4, rho 0.9), categorical cross-entropy, accuracy computed per
batch. Throughput is the median over timed epochs after a warm-up epoch (tapeflow's warm-up
traces the train step). A second tapeflow row calls the traced train step directly on the same
batches, so the gap between the two is what ``fit``'s Python loop (batching, callbacks, logs)
costs.

    python benchmarks/bench_fit.py                  # 1,024 images x 3 timed epochs
    python benchmarks/bench_fit.py --eager          # also tapeflow with run_eagerly=True
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

# TensorFlow's throughput for this workload on the project machine, as quoted in issue 5.
# TensorFlow is not installed here: this number is a reference, NOT measured by this script.
TF_REFERENCE_IMG_S = 984.0
BATCH = 256


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.random((n, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, size=n)]
    return x, y


def tapeflow_fit(x: np.ndarray, y: np.ndarray, epochs: int, eager: bool) -> dict:
    import tapeflow as tf
    from tapeflow.models import CifarCNN

    tf.random.set_seed(0)
    model = CifarCNN()
    model.compile(loss="categorical_crossentropy",
                  optimizer=tf.keras.optimizers.RMSprop(learning_rate=1e-4, rho=0.9),
                  metrics=["accuracy"], run_eagerly=eager)
    start = time.perf_counter()
    model.fit(x[:2 * BATCH], y[:2 * BATCH], batch_size=BATCH, epochs=1, verbose=0)
    warmup_s = time.perf_counter() - start

    class EpochTimer(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.start)

    times: list[float] = []
    model.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=True, verbose=0,
              callbacks=[EpochTimer()])
    out = {"img_s": len(x) / statistics.median(times), "warmup_s": warmup_s}
    if not eager:
        step = model.make_train_function()
        batches = [(tf.constant(x[i:i + BATCH]), tf.constant(y[i:i + BATCH]), None)
                   for i in range(0, len(x), BATCH)]
        step_times = []
        for _ in range(epochs):
            start = time.perf_counter()
            for batch in batches:
                step(batch)
            step_times.append(time.perf_counter() - start)
        out["step_img_s"] = len(x) / statistics.median(step_times)
        out["traces"] = step.experimental_get_tracing_count()
    return out


def torch_loop(x_np: np.ndarray, y_np: np.ndarray, epochs: int) -> dict:
    import torch

    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
        nn.Linear(2304, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4, alpha=0.9, eps=1e-7)
    x = torch.from_numpy(x_np.transpose(0, 3, 1, 2).copy())
    y = torch.from_numpy(y_np.argmax(axis=1))

    def epoch(n: int) -> float:
        start = time.perf_counter()
        perm = torch.randperm(n)
        correct = 0
        for i in range(0, n, BATCH):
            idx = perm[i:i + BATCH]
            optimizer.zero_grad()
            logits = model(x[idx])
            loss = nn.functional.cross_entropy(logits, y[idx])
            loss.backward()
            optimizer.step()
            correct += int((logits.argmax(1) == y[idx]).sum())
        return time.perf_counter() - start

    epoch(2 * BATCH)
    times = [epoch(len(x)) for _ in range(epochs)]
    return {"img_s": len(x) / statistics.median(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4 * BATCH, help="images per epoch")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs (median)")
    parser.add_argument("--eager", action="store_true", help="also time run_eagerly=True")
    args = parser.parse_args()
    x, y = _data(args.images)

    torch_res = torch_loop(x, y, args.epochs)
    rows = [("torch eager loop", torch_res["img_s"])]
    graph = tapeflow_fit(x, y, args.epochs, eager=False)
    rows += [("tapeflow fit (graph)", graph["img_s"]),
             ("tapeflow step only", graph["step_img_s"])]
    if args.eager:
        rows.append(("tapeflow fit (eager)", tapeflow_fit(x, y, args.epochs, True)["img_s"]))

    print(f"W5 seed-004 CIFAR CNN training, batch {BATCH}, RMSprop, {args.images} images/epoch, "
          f"median of {args.epochs} epochs")
    print(f"  {'run':22s} {'img/s':>8s} {'vs torch':>9s} {'vs TF':>7s}")
    for name, img_s in rows:
        print(f"  {name:22s} {img_s:8.0f} {img_s / torch_res['img_s']:8.2f}x "
              f"{img_s / TF_REFERENCE_IMG_S:6.2f}x")
    print(f"  TF reference: {TF_REFERENCE_IMG_S:.0f} img/s (quoted in issue 5, not measured here)")
    print(f"  tapeflow warm-up fit (trace + 2 steps): {graph['warmup_s']:.1f} s; train step "
          f"traced {graph['traces']} time(s)")


if __name__ == "__main__":
    main()
