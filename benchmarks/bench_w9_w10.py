"""W9 (Transformer encoder) and W10 (Embedding + LSTM) training steps: tapeflow eager, tapeflow
tf.function and PyTorch eager side by side, each in its own fresh process (issue 25).

    python benchmarks/bench_w9_w10.py [--only w9|w10] [--rounds 5] [--steps 10] [--torch-threads 1]

The models are ../shared/workloads' tf_models2.py / torch_models2.py: W9 two encoder blocks
(MultiHeadAttention 4 heads, LayerNormalization, feed-forward 256; batch 32 of 64 tokens x
128), W10 Embedding(1000, 64) -> LSTM(128) -> Dense(10), batch 64 of 50 tokens; one Adam step
each. Every round starts one fresh process per variant, in an order that rotates every round
(on a shared machine adjacent processes see the same load); each process warms up, then times
`steps` steps. Separate processes keep the frameworks' threads apart: PyTorch's OpenMP threads
spin for a while after each of its steps, and in one process with tapeflow they took the core
tapeflow's split products wanted (and tapeflow's slowed PyTorch). PyTorch runs with its own
defaults (one thread per core, active waiting) unless --torch-threads is given. Prints each
variant's min / median / p90 step over all rounds, the median over rounds of its median's
ratio to PyTorch's median in the same round, and its CPU time per step (all the process's
threads, median over rounds: PyTorch's spinning OpenMP threads count too, as they take a core).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from timing import spread_text, timed

B, T, D, H, FF, V = 32, 64, 128, 4, 256, 1000


def _data(workload: str):
    rng = np.random.default_rng(0)
    if workload == "w9":
        return rng.standard_normal((B, T, D)).astype(np.float32), rng.integers(0, 10, B)
    return rng.integers(0, V, (64, 50)).astype(np.int32), rng.integers(0, 10, 64)


def tapeflow_step(workload: str, wrap=lambda f: f):
    """One training step of a freshly made model, `wrap`ped (``tf.function`` for graph mode);
    called with no arguments, it returns the loss tensor."""
    import tapeflow as tf

    layers = tf.keras.layers
    tf.random.set_seed(0)

    def transformer():
        inp = tf.keras.Input((T, D))
        x = inp
        for _ in range(2):
            a = layers.MultiHeadAttention(num_heads=H, key_dim=D // H)(x, x)
            x = layers.LayerNormalization()(x + a)
            f = layers.Dense(D)(layers.Dense(FF, activation="relu")(x))
            x = layers.LayerNormalization()(x + f)
        out = layers.Dense(10)(layers.GlobalAveragePooling1D()(x))
        return tf.keras.Model(inp, out)

    def lstm():
        inp = tf.keras.Input((50,), dtype="int32")
        out = layers.Dense(10)(layers.LSTM(128)(layers.Embedding(V, 64)(inp)))
        return tf.keras.Model(inp, out)

    x_np, y_np = _data(workload)
    x, y = tf.constant(x_np), tf.constant(y_np)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model = transformer() if workload == "w9" else lstm()
    opt = tf.keras.optimizers.Adam(1e-3)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return wrap(step)


def torch_step(workload: str, threads: int | None):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if threads:
        torch.set_num_threads(threads)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = nn.MultiheadAttention(D, H, batch_first=True)
            self.n1, self.n2 = nn.LayerNorm(D, eps=1e-3), nn.LayerNorm(D, eps=1e-3)
            self.f1, self.f2 = nn.Linear(D, FF), nn.Linear(FF, D)

        def forward(self, x):
            x = self.n1(x + self.att(x, x, x, need_weights=False)[0])
            return self.n2(x + self.f2(torch.relu(self.f1(x))))

    class LSTMNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.lstm = nn.Embedding(V, 64), nn.LSTM(64, 128, batch_first=True)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            return self.out(self.lstm(self.emb(x))[0][:, -1])

    if workload == "w9":
        model = nn.Sequential(Block(), Block())
        head = nn.Linear(D, 10)
        params = list(model.parameters()) + list(head.parameters())
        forward = lambda x: head(model(x).mean(1))  # noqa: E731
    else:
        net = LSTMNet()
        params, forward = list(net.parameters()), net
    x_np, y_np = _data(workload)
    x, y = torch.tensor(x_np).long() if workload == "w10" else torch.tensor(x_np), \
        torch.tensor(y_np)
    opt = torch.optim.Adam(params, 1e-3)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


VARIANTS = ("tapeflow-eager", "tapeflow-graph", "torch-eager")
LABELS = {"tapeflow-eager": "tapeflow eager", "tapeflow-graph": "tapeflow tf.function",
          "torch-eager": "PyTorch eager"}


def worker(workload: str, variant: str, steps: int, warmup: int, torch_threads: int | None) -> dict:
    """In this (fresh) process: build one variant's step, time it; first call and step times."""
    if variant == "torch-eager":
        run = torch_step(workload, torch_threads)
    else:
        import tapeflow as tf

        wrap = tf.function if variant == "tapeflow-graph" else (lambda f: f)
        step = tapeflow_step(workload, wrap)

        def run():
            return step().numpy()
    first = timed(run, 1, 0)[0]
    timed(run, warmup)
    cpu = time.process_time()
    times = timed(run, steps)
    return {"first": first, "times": times, "cpu": (time.process_time() - cpu) / steps}


def _run_worker(workload: str, variant: str, steps: int, warmup: int,
                torch_threads: int | None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", variant, "--only", workload,
           "--steps", str(steps), "--warmup", str(warmup)]
    if torch_threads:
        cmd += ["--torch-threads", str(torch_threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(workload: str, rounds: int, steps: int, warmup: int, torch_threads: int | None) -> None:
    names = [v for v in VARIANTS if v != "torch-eager" or _has_torch()]
    if "torch-eager" not in names:
        print("(PyTorch not installed: tapeflow only)")
    times: dict[str, list[float]] = {n: [] for n in names}
    firsts: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    errors: dict[str, str] = {}
    for r in range(rounds):
        medians = {}
        for name in names[r % len(names):] + names[:r % len(names)]:
            res = _run_worker(workload, name, steps, warmup, torch_threads)
            if "error" in res:
                errors[name] = res["error"]
                continue
            times[name] += res["times"]
            firsts[name].append(res["first"])
            cpus[name].append(res["cpu"])
            medians[name] = statistics.median(res["times"])
        if "torch-eager" in medians:
            for name in medians:
                ratios[name].append(medians[name] / medians["torch-eager"])
    title = {"w9": "W9 Transformer step (2 blocks, batch 32x64x128, Adam)",
             "w10": "W10 Embedding+LSTM(128) step (batch 64x50, Adam)"}[workload]
    print(f"{title}: {rounds} rounds x {steps} steps, one fresh process per variant and round")
    print(f"  {'variant':22s} {'min / median / p90 ms':>23s}  {'x PyTorch':>9}  "
          f"{'CPU ms':>7}  first call s")
    for name in names:
        if not times[name]:
            print(f"  {LABELS[name]:22s} error: {errors.get(name)}")
            continue
        ratio = f"{statistics.median(ratios[name]):9.2f}" if ratios[name] else " " * 9
        print(f"  {LABELS[name]:22s} {spread_text(times[name], 1e3, 1):>23s}  {ratio}  "
              f"{statistics.median(cpus[name]) * 1e3:7.1f}  {statistics.median(firsts[name]):.2f}")


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("w9", "w10"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per process")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads (default: PyTorch's own, one per core)")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.only, args.worker, args.steps, args.warmup,
                                args.torch_threads)))
        return
    for workload in ("w9", "w10"):
        if args.only in (None, workload):
            bench(workload, args.rounds, args.steps, args.warmup, args.torch_threads)


if __name__ == "__main__":
    main()
