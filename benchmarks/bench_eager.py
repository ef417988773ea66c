"""Eager cost: tapeflow vs NumPy vs PyTorch, per op and on the seed's Keras MLP, in one run.

    python benchmarks/bench_eager.py [--repeats 7] [--number 20000] [--clock wall|thread]

Per-op rows time one call (warm-up first, then the median of `repeats` timings of `number`
calls). The workload rows are tf_micro.py's (shared/workloads): W1, the seed MLP's inference
call (Keras model: Flatten, Dense 128 relu, Dropout, Dense 10; PyTorch under no_grad), and W3,
its training step (GradientTape, sparse cross-entropy from logits, Keras Adam; PyTorch's
loss.backward() and torch.optim.Adam); they alternate with PyTorch round by round, so both see
the same machine. Ratios are tapeflow's time over the peer's: below 1.0 means tapeflow is
faster; the spreads (min/median/p90 of the rounds, ``timing.spread``) follow. ``--clock
thread`` measures this thread's CPU time instead of wall time (steadier on a shared machine;
every framework then runs single-threaded).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # same single thread as torch below

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread_text  # noqa: E402

CLOCK = {"wall": time.perf_counter, "thread": time.thread_time}


def per_call_us(fn, number: int, clock) -> float:
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number * 1e6


def rounds_us(fn, number: int, repeats: int, clock) -> list[float]:
    per_call_us(fn, max(1, number // 10), clock)  # warm-up
    return [per_call_us(fn, number, clock) for _ in range(repeats)]


def op_cases(torch):
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((2, 10)).astype(np.float32)
    x_np = rng.standard_normal((60, 784)).astype(np.float32)
    w_np = rng.standard_normal((784, 128)).astype(np.float32)
    a, b, x, w = (tf.constant(v) for v in (a_np, b_np, x_np, w_np))
    rows = {
        "add f32[10]": (lambda: a + b, lambda: a_np + b_np),
        "mul+reduce_sum f32[10]": (lambda: tf.reduce_sum(a * b), lambda: np.sum(a_np * b_np)),
        "relu-like maximum f32[10]": (lambda: tf.maximum(a, 0.0),
                                      lambda: np.maximum(a_np, np.float32(0))),
        "x[1:5] f32[10]": (lambda: a[1:5], lambda: a_np[1:5]),
        "matmul [60,784]x[784,128]": (lambda: tf.matmul(x, w), lambda: x_np @ w_np),
    }
    if torch is not None:
        at, bt, xt, wt = (torch.from_numpy(v) for v in (a_np, b_np, x_np, w_np))
        torch_fns = [lambda: at + bt, lambda: torch.sum(at * bt),
                     lambda: torch.clamp_min(at, 0.0), lambda: at[1:5], lambda: xt @ wt]
    else:
        torch_fns = [None] * len(rows)
    return [(name, ours, ref, t) for (name, (ours, ref)), t in zip(rows.items(), torch_fns)]


# --- the seed MLP (shared/workloads/tf_micro.py, torch_micro.py) -----------------------------


class SequentialModel(tf.keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.flatten = tf.keras.layers.Flatten()
        self.dense_1 = tf.keras.layers.Dense(128, activation="relu")
        self.dropout = tf.keras.layers.Dropout(0.2)
        self.dense_2 = tf.keras.layers.Dense(10)

    def call(self, x, training=False):
        x = self.flatten(x)
        x = self.dense_1(x)
        x = self.dropout(x, training=training)
        return self.dense_2(x)


def tapeflow_workloads():
    x = tf.random.uniform([60, 28, 28])
    labels = tf.random.uniform([60], 0, 10, dtype=tf.int32)
    inference = SequentialModel()
    model, opt = SequentialModel(), tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def train_step():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return lambda: inference(x), train_step


def torch_workloads(torch):
    nn, functional = torch.nn, torch.nn.functional

    def mlp():
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Dropout(0.2),
                             nn.Linear(128, 10))

    x, labels = torch.rand(60, 28, 28), torch.randint(0, 10, (60,))
    inference, model = mlp().eval(), mlp().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def infer():
        with torch.no_grad():
            return inference(x)

    def train_step():
        opt.zero_grad(set_to_none=True)
        loss = functional.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        return loss

    return infer, train_step


def alternating_us(pairs: dict, number: int, repeats: int, clock) -> dict:
    """Per-call times of each function's rounds, the rounds interleaved."""
    for fn in pairs.values():
        per_call_us(fn, max(1, number // 5), clock)  # warm-up
    times: dict = {name: [] for name in pairs}
    for _ in range(repeats):
        for name, fn in pairs.items():
            times[name].append(per_call_us(fn, number, clock))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall")
    args = parser.parse_args()
    clock = CLOCK[args.clock]
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"{'op':28} {'tapeflow us':>12} {'numpy us':>10} {'torch us':>10} "
          f"{'tf/np':>7} {'tf/torch':>9}")
    spreads = []
    for name, ours, ref, theirs in op_cases(torch):
        number = args.number if "matmul" not in name else max(1, args.number // 100)
        r_ours = rounds_us(ours, number, args.repeats, clock)
        r_torch = rounds_us(theirs, number, args.repeats, clock) if theirs else [float("nan")]
        t_ours, t_torch = statistics.median(r_ours), statistics.median(r_torch)
        t_np = statistics.median(rounds_us(ref, number, args.repeats, clock))
        print(f"{name:28} {t_ours:12.2f} {t_np:10.2f} {t_torch:10.2f} "
              f"{t_ours / t_np:7.2f} {t_ours / t_torch:9.2f}")
        spreads.append(f"  {name:26} tapeflow {spread_text(r_ours)}, torch {spread_text(r_torch)}")
    print("min/median/p90 us:", *spreads, sep="\n")
    if torch is None:
        return
    print(f"\n{'seed MLP, eager':28} {'tapeflow us':>12} {'torch us':>10} {'tf/torch':>9}")
    ours, theirs = tapeflow_workloads(), torch_workloads(torch)
    number = max(20, args.number // 200)
    for name, i, n in (("W1 inference (Keras)", 0, number),
                       ("W3 train step (tape+Adam)", 1, max(10, number // 4))):
        r = alternating_us({"ours": ours[i], "torch": theirs[i]}, n, args.repeats, clock)
        t = {k: statistics.median(v) for k, v in r.items()}
        print(f"{name:28} {t['ours']:12.1f} {t['torch']:10.1f} {t['ours'] / t['torch']:9.2f}"
              f"   min/median/p90 us: tapeflow {spread_text(r['ours'], digits=1)}, "
              f"torch {spread_text(r['torch'], digits=1)}")


if __name__ == "__main__":
    main()
