"""Eager cost per op: tapeflow vs NumPy vs PyTorch, side by side in one run.

    python benchmarks/bench_eager.py [--repeats 7] [--number 20000]

Each row times one call (warm-up first, then the median of `repeats` timings of `number`
calls). Ratios are tapeflow's time over the peer's: below 1.0 means tapeflow is faster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import timeit

import numpy as np

import tapeflow as tf


def median_us(fn, number: int, repeats: int) -> float:
    fn()
    timeit.timeit(fn, number=max(1, number // 10))  # warm-up
    times = timeit.repeat(fn, number=number, repeat=repeats)
    return statistics.median(times) / number * 1e6


def cases(torch):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(os.cpu_count() or 1)
    except ImportError:
        torch = None
    print(f"{'op':28} {'tapeflow us':>12} {'numpy us':>10} {'torch us':>10} "
          f"{'tf/np':>7} {'tf/torch':>9}")
    for name, ours, ref, theirs in cases(torch):
        number = args.number if "matmul" not in name else max(1, args.number // 100)
        t_ours = median_us(ours, number, args.repeats)
        t_np = median_us(ref, number, args.repeats)
        t_torch = median_us(theirs, number, args.repeats) if theirs else float("nan")
        print(f"{name:28} {t_ours:12.2f} {t_np:10.2f} {t_torch:10.2f} "
              f"{t_ours / t_np:7.2f} {t_ours / t_torch:9.2f}")


if __name__ == "__main__":
    main()
