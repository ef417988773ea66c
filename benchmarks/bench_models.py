"""Model benchmarks, tapeflow side by side with PyTorch (eager) and TensorFlow in one run.

W4: one DenseNet training step (Adam), batch 64, input [64, 32, 32, 3]: Conv3x3(16) -> 3 dense
    blocks of 4 x [BN-ReLU-Conv3x3(12), concat] with BN-ReLU-Conv1x1-AvgPool2 transitions ->
    BN-ReLU-GAP-Dense(10). Median step time after warm-up, and the process's peak RSS.
W5: seed 004's CIFAR CNN trained with ``model.fit`` (RMSprop, categorical cross-entropy,
    batch 256): images per second over one epoch after a warm-up epoch.
RevNet (seed 002): reversible vs regular backprop step time (the blog reports +25%) and the
    peak memory of each as the network gets deeper.

Every measurement runs in its own process, so peak RSS belongs to that workload alone.

    python benchmarks/bench_models.py            # everything
    python benchmarks/bench_models.py --only w4  # one workload
    python benchmarks/bench_models.py --only w4 --rounds 5  # alternate, medians
    python benchmarks/bench_models.py --tf-python /path/to/venv-with-tf/bin/python
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from timing import spread, timed

# TensorFlow's numbers quoted in issue 5 (another machine), used when TF is not installed;
# with TF (here or via --tf-python) its runs go side by side with the others
TF_REFERENCE = {"w4_graph_ms": 219.0, "w5_img_s": 984.0}


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _step_ms(step, steps: int, warmup: int) -> dict:
    """Step time after warm-up: median, min and p90 in ms (the spread, not only the median)."""
    low, median, p90 = spread(timed(step, steps, warmup))
    return {"ms": median * 1e3, "min_ms": low * 1e3, "p90_ms": p90 * 1e3}


def _w4_data(batch: int = 64):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((batch, 32, 32, 3)).astype(np.float32),
            rng.integers(0, 10, size=batch))


def w4_tapeflow(mode: str, steps: int, warmup: int) -> dict:
    import tapeflow as tf
    from tapeflow.models import DenseNet

    tf.random.set_seed(0)
    x_np, y_np = _w4_data()
    model = DenseNet(input_shape=(32, 32, 3))
    optimizer = tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = tf.constant(x_np), tf.constant(y_np)

    def train_step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    step = tf.function(train_step) if mode == "graph" else train_step
    return {**_step_ms(lambda: step(x, y), steps, warmup), "rss_mb": _peak_rss_mb()}


def _torch_densenet(torch):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, channels: int, layers: int, growth: int):
            super().__init__()
            self.norms = nn.ModuleList()
            self.convs = nn.ModuleList()
            for i in range(layers):
                self.norms.append(nn.BatchNorm2d(channels + i * growth, eps=1e-3,
                                                 momentum=0.01))
                self.convs.append(nn.Conv2d(channels + i * growth, growth, 3, padding=1))

        def forward(self, x):
            for norm, conv in zip(self.norms, self.convs):
                x = torch.cat([x, conv(torch.relu(norm(x)))], dim=1)
            return x

    def transition(channels: int):
        return nn.Sequential(nn.BatchNorm2d(channels, eps=1e-3, momentum=0.01), nn.ReLU(),
                             nn.Conv2d(channels, channels, 1), nn.AvgPool2d(2))

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), Block(16, 4, 12), transition(64), Block(64, 4, 12),
        transition(112), Block(112, 4, 12), nn.BatchNorm2d(160, eps=1e-3, momentum=0.01),
        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(160, 10))


def w4_torch(mode: str, steps: int, warmup: int) -> dict:
    import torch

    torch.manual_seed(0)
    x_np, y_np = _w4_data()
    model = _torch_densenet(torch)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.tensor(x_np.transpose(0, 3, 1, 2).copy())
    y = torch.tensor(y_np)

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    return {**_step_ms(step, steps, warmup), "rss_mb": _peak_rss_mb(),
            "params": sum(p.numel() for p in model.parameters())}


def _w5_data(n: int):
    rng = np.random.default_rng(0)
    x = rng.random((n, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, size=n)]
    return x, y


def w5_tapeflow(mode: str, images: int, warmup: int) -> dict:
    import tapeflow as tf
    from tapeflow.models import CifarCNN

    tf.random.set_seed(0)
    x, y = _w5_data(images)
    model = CifarCNN()
    model.compile(loss="categorical_crossentropy",
                  optimizer=tf.keras.optimizers.RMSprop(learning_rate=0.0001, decay=1e-6),
                  metrics=["accuracy"], run_eagerly=(mode == "eager"))
    model.fit(x[:512], y[:512], batch_size=256, epochs=1, verbose=0)  # warm-up: traces
    start = time.perf_counter()
    model.fit(x, y, batch_size=256, epochs=1, shuffle=True, verbose=0)
    return {"img_s": images / (time.perf_counter() - start), "rss_mb": _peak_rss_mb()}


def w5_torch(mode: str, images: int, warmup: int) -> dict:
    import torch

    nn = torch.nn
    torch.manual_seed(0)
    x_np, y_np = _w5_data(images)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten(),
        nn.Linear(2304, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.0001, alpha=0.9, eps=1e-7)
    x = torch.tensor(x_np.transpose(0, 3, 1, 2).copy())
    y = torch.tensor(y_np.argmax(axis=1))

    def epoch(n: int):
        perm = torch.randperm(n)
        for i in range(0, n, 256):
            idx = perm[i:i + 256]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()

    epoch(512)
    start = time.perf_counter()
    epoch(images)
    return {"img_s": images / (time.perf_counter() - start), "rss_mb": _peak_rss_mb()}


def _tf_densenet(keras):
    layers = keras.layers

    def bn_relu(x):
        return layers.ReLU()(layers.BatchNormalization(epsilon=1e-3, momentum=0.99)(x))

    inputs = keras.Input((32, 32, 3))
    x = layers.Conv2D(16, 3, padding="same")(inputs)
    for block, channels in enumerate((64, 112, 160)):
        for _ in range(4):
            x = layers.Concatenate()([x, layers.Conv2D(12, 3, padding="same")(bn_relu(x))])
        if block < 2:
            x = layers.AveragePooling2D(2)(layers.Conv2D(channels, 1)(bn_relu(x)))
    x = layers.GlobalAveragePooling2D()(bn_relu(x))
    return keras.Model(inputs, layers.Dense(10)(x))


def w4_tensorflow(mode: str, steps: int, warmup: int) -> dict:
    import tensorflow as tf

    tf.random.set_seed(0)
    x_np, y_np = _w4_data()
    model = _tf_densenet(tf.keras)
    optimizer = tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = tf.constant(x_np), tf.constant(y_np)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return {**_step_ms(lambda: step().numpy(), steps, warmup), "rss_mb": _peak_rss_mb(),
            "params": int(sum(np.prod(v.shape) for v in model.trainable_variables))}


def w5_tensorflow(mode: str, images: int, warmup: int) -> dict:
    import tensorflow as tf

    layers = tf.keras.layers
    tf.random.set_seed(0)
    x, y = _w5_data(images)
    model = tf.keras.Sequential([
        tf.keras.Input((32, 32, 3)), layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2), layers.Dropout(0.25),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2), layers.Dropout(0.25),
        layers.Flatten(), layers.Dense(512, activation="relu"), layers.Dropout(0.5),
        layers.Dense(10, activation="softmax")])
    model.compile(loss="categorical_crossentropy",
                  optimizer=tf.keras.optimizers.RMSprop(learning_rate=0.0001),
                  metrics=["accuracy"])
    model.fit(x[:512], y[:512], batch_size=256, epochs=1, verbose=0)  # warm-up: traces
    start = time.perf_counter()
    model.fit(x, y, batch_size=256, epochs=1, shuffle=True, verbose=0)
    return {"img_s": images / (time.perf_counter() - start), "rss_mb": _peak_rss_mb()}


def _revnet_step(tf, model, x, labels, reversible: bool):
    if reversible:
        return model.compute_gradients(x, labels)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=model(x, training=True)))
    return tape.gradient(loss, model.trainable_variables), loss


def _paired_times(steps: dict, rounds: int) -> dict:
    """Wall and CPU seconds of each step, called in turn `rounds` times: adjacent calls see
    the same machine speed, so the per-round ratios survive drift that sequential medians do
    not (this machine's speed changes up to 2x within minutes). The order alternates from round
    to round, so neither step always follows the other (its freed memory, its cache state)."""
    times = {name: {"wall": [], "cpu": []} for name in steps}
    names = list(steps)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            steps[name]()
            times[name]["wall"].append(time.perf_counter() - wall)
            times[name]["cpu"].append(time.process_time() - cpu)
    return times


def revnet_overhead(mode: str, steps: int, warmup: int) -> dict:
    """Per depth: median step times, the median per-round overhead of the reversible step in
    wall time and in CPU time (all threads: the compute it costs), and each one's peak memory."""
    import tracemalloc

    import tapeflow as tf
    from tapeflow.models import RevNet

    tf.random.set_seed(0)
    x = tf.random.normal((32, 32, 32, 3))
    labels = tf.constant(np.arange(32) % 10)
    out = {}
    for depth in (2, 6):
        model = RevNet(filters=16, num_blocks=depth)
        model(x[:1])
        fns = {}
        for kind, reversible in (("regular", False), ("reversible", True)):
            def step(m=model, r=reversible):
                return _revnet_step(tf, m, x, labels, r)

            fns[kind] = tf.function(step) if mode == "graph" else step
            for _ in range(warmup):
                fns[kind]()
            tracemalloc.start()
            fns[kind]()
            out[f"{kind}_peak_mb_depth{depth}"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        times = _paired_times(fns, steps)
        for kind in fns:
            out[f"{kind}_ms_depth{depth}"] = statistics.median(times[kind]["wall"]) * 1e3
        for clock in ("wall", "cpu"):
            out[f"{clock}_overhead_depth{depth}"] = statistics.median(
                rev / reg - 1 for rev, reg in zip(times["reversible"][clock],
                                                  times["regular"][clock]))
    return out


WORKERS = {
    "w4-tapeflow-graph": (w4_tapeflow, "graph"), "w4-tapeflow-eager": (w4_tapeflow, "eager"),
    "w4-torch-eager": (w4_torch, "eager"),
    "w5-tapeflow-graph": (w5_tapeflow, "graph"), "w5-torch-eager": (w5_torch, "eager"),
    "w4-tensorflow-graph": (w4_tensorflow, "graph"), "w5-tensorflow-fit": (w5_tensorflow, "graph"),
    "revnet-eager": (revnet_overhead, "eager"), "revnet-graph": (revnet_overhead, "graph"),
}


def _tensorflow_python(path: str | None) -> str | None:
    """The interpreter for TensorFlow's runs: --tf-python, else this one if it has TF."""
    if path:
        return path
    import importlib.util

    return sys.executable if importlib.util.find_spec("tensorflow") else None


def _run_worker(name: str, size: int, warmup: int, threads: int | None,
                python: str | None = None) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    if threads:  # the same thread budget for NumPy's BLAS, numba and PyTorch
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS"):
            env[var] = str(threads)
    out = subprocess.run([python or sys.executable, __file__, "--worker", name, "--size", str(size),
                          "--warmup", str(warmup)], capture_output=True, text=True, check=False,
                         env=env)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["w4", "w5", "revnet"], default=None)
    parser.add_argument("--steps", type=int, default=10, help="W4 timed steps")
    parser.add_argument("--images", type=int, default=2048, help="W5 images per timed epoch")
    parser.add_argument("--rounds", type=int, default=1,
                        help="W4: run the three processes this many times in turn and report "
                             "medians (ratios per round), as the machine's speed drifts")
    parser.add_argument("--revnet-rounds", type=int, default=15,
                        help="RevNet: regular and reversible steps timed in turn this many times")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads for every run (default: library defaults)")
    parser.add_argument("--tf-python", default=None,
                        help="a Python with TensorFlow for its side-by-side runs (default: this "
                             "one if it has TensorFlow; else the issue's quoted numbers)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        fn, mode = WORKERS[args.worker]
        print(json.dumps(fn(mode, args.size, args.warmup)))
        return
    tf_python = _tensorflow_python(args.tf_python)
    if args.only in (None, "w4"):
        names = ["w4-torch-eager", "w4-tapeflow-graph", "w4-tapeflow-eager"]
        names += ["w4-tensorflow-graph"] if tf_python else []
        rounds = [{name: _run_worker(name, args.steps, args.warmup, args.threads,
                                     tf_python if "tensorflow" in name else None)
                   for name in names} for _ in range(args.rounds)]
        _report_w4(rounds)
    if args.only in (None, "w5"):
        names = ["w5-torch-eager", "w5-tapeflow-graph"]
        names += ["w5-tensorflow-fit"] if tf_python else []
        rounds = [{name: _run_worker(name, args.images, 1, args.threads,
                                     tf_python if "tensorflow" in name else None)
                   for name in names} for _ in range(args.rounds)]
        _report_w5(rounds)
    if args.only in (None, "revnet"):
        _report_revnet({mode: _run_worker(f"revnet-{mode}", args.revnet_rounds, 2, args.threads)
                        for mode in ("eager", "graph")})


def _report_revnet(res: dict) -> None:
    print("RevNet step, batch 32, [32,32,32,3], filters 16: reversible vs regular backprop "
          "(overheads: median of per-round ratios)")
    print(f"  {'run':16s} {'regular ms':>10s} {'reversible ms':>13s} {'wall +':>7s} "
          f"{'CPU +':>6s} {'regular peak MB':>15s} {'reversible peak MB':>18s}")
    for mode, r in res.items():
        if "error" in r:
            print(f"  {mode:16s} error: {r['error']}")
            continue
        for depth in (2, 6):
            print(f"  {mode + f' depth {depth}':16s} {r[f'regular_ms_depth{depth}']:10.1f} "
                  f"{r[f'reversible_ms_depth{depth}']:13.1f} "
                  f"{r[f'wall_overhead_depth{depth}']:7.0%} "
                  f"{r[f'cpu_overhead_depth{depth}']:6.0%} "
                  f"{r[f'regular_peak_mb_depth{depth}']:15.1f} "
                  f"{r[f'reversible_peak_mb_depth{depth}']:18.1f}")
    print("  target (issue 5, the blog's figure): reversible overhead <= 25%")


def _report_w4(rounds: list[dict]) -> None:
    """Median step time and peak RSS per run over the rounds; each ratio is the median of
    the per-round ratios to that round's PyTorch run."""
    print(f"W4 DenseNet training step, batch 64, [64,32,32,3], Adam (median of {len(rounds)} "
          "round(s))")
    print(f"  {'run':22s} {'min ms':>7s} {'median':>7s} {'p90':>7s} {'vs torch':>9s} "
          f"{'peak RSS MB':>12s} {'vs torch':>9s}")
    ok = [r for r in rounds if "ms" in r["w4-torch-eager"]]
    for name in rounds[0]:
        runs = [r[name] for r in rounds if "ms" in r[name]]
        if not runs:
            print(f"  {name:22s} error: {rounds[0][name].get('error')}")
            continue
        ms = statistics.median(r["ms"] for r in runs)
        rss = statistics.median(r["rss_mb"] for r in runs)
        pairs = [(r[name], r["w4-torch-eager"]) for r in ok if "ms" in r[name]]
        ratio = statistics.median(a["ms"] / b["ms"] for a, b in pairs) if pairs else math.nan
        rss_ratio = (statistics.median(a["rss_mb"] / b["rss_mb"] for a, b in pairs) if pairs
                     else math.nan)
        low, high = (statistics.median(r.get(k, math.nan) for r in runs)
                     for k in ("min_ms", "p90_ms"))
        print(f"  {name:22s} {low:7.1f} {ms:7.1f} {high:7.1f} {ratio:8.2f}x {rss:12.0f} "
              f"{rss_ratio:8.2f}x")
    if ok and "w4-tensorflow-graph" not in rounds[0]:
        torch_ms = statistics.median(r["w4-torch-eager"]["ms"] for r in ok)
        quoted = TF_REFERENCE["w4_graph_ms"]
        print(f"  TensorFlow graph (quoted in issue 5, another machine): {quoted:.0f} ms = "
              f"{quoted / torch_ms:.2f}x this torch run")
    print("  target: tapeflow graph <= 0.70x torch eager in time and peak RSS")


def _report_w5(rounds: list[dict]) -> None:
    """Median images/s per run; the ratio to TensorFlow's run of the same round (median over
    rounds), or to the issue's quoted 984 img/s when TensorFlow is not installed."""
    measured = "w5-tensorflow-fit" in rounds[0]
    ref = "TF here" if measured else f"TF {TF_REFERENCE['w5_img_s']:.0f}"
    print(f"W5 seed-004 CIFAR CNN fit throughput, batch 256, RMSprop (median of {len(rounds)} "
          "round(s))")
    print(f"  {'run':22s} {'img/s':>9s} {'vs ' + ref:>11s} {'peak RSS MB':>12s}")
    for name in rounds[0]:
        runs = [r for r in rounds if "img_s" in r[name]]
        if not runs:
            print(f"  {name:22s} error: {rounds[0][name].get('error')}")
            continue
        img_s = statistics.median(r[name]["img_s"] for r in runs)
        if measured:
            pairs = [r for r in runs if "img_s" in r["w5-tensorflow-fit"]]
            ratio = (statistics.median(r[name]["img_s"] / r["w5-tensorflow-fit"]["img_s"]
                                       for r in pairs) if pairs else math.nan)
        else:
            ratio = img_s / TF_REFERENCE["w5_img_s"]
        rss = statistics.median(r[name]["rss_mb"] for r in runs)
        print(f"  {name:22s} {img_s:9.0f} {ratio:10.2f}x {rss:12.0f}")
    print("  target: tapeflow fit >= TensorFlow's throughput")


if __name__ == "__main__":
    main()
