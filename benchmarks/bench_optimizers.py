"""Optimizer step time: tapeflow's fused update ops vs torch.optim, side by side.

Two workloads: many small variables (per-variable Python overhead dominates, like the DenseNet
of the issue: ~60 variables) and a few large ones (memory traffic dominates). Reports the median
of repeated steps after a warm-up, and tapeflow / torch ratios (lower is better for tapeflow),
then tapeflow's spread (min / median / p90).

    python benchmarks/bench_optimizers.py [--repeats 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

import tapeflow as tf
from tapeflow.keras import optimizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread_text, timed  # noqa: E402

WORKLOADS = {
    "60 small vars (DenseNet-like)": [(3, 3, 48, 12)] * 24 + [(12,)] * 24 + [(48,)] * 12,
    "4 large vars (2.1M params)": [(1024, 1024), (1024,), (1024, 1024), (1024,)],
}
CONFIGS = {
    "SGD": (lambda: optimizers.SGD(0.01), lambda t, p: t.optim.SGD(p, lr=0.01)),
    "SGD momentum": (lambda: optimizers.SGD(0.01, momentum=0.9),
                     lambda t, p: t.optim.SGD(p, lr=0.01, momentum=0.9)),
    "Adam": (lambda: optimizers.Adam(0.001), lambda t, p: t.optim.Adam(p, lr=0.001)),
    "RMSprop": (lambda: optimizers.RMSprop(0.001), lambda t, p: t.optim.RMSprop(p, lr=0.001)),
}


def _times_ms(step, repeats: int, warmup: int = 5) -> list[float]:
    return [t * 1e3 for t in timed(step, repeats, warmup)]


def bench_tapeflow(make, shapes, repeats: int) -> list[float]:
    rng = np.random.default_rng(0)
    variables = [tf.Variable(rng.normal(size=s).astype(np.float32)) for s in shapes]
    grads = [tf.constant(rng.normal(size=s).astype(np.float32)) for s in shapes]
    opt = make()
    pairs = list(zip(grads, variables))
    return _times_ms(lambda: opt.apply_gradients(pairs), repeats)


def bench_torch(torch, make, shapes, repeats: int, foreach: bool) -> list[float]:
    g = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(*s, generator=g)) for s in shapes]
    for p in params:
        p.grad = torch.randn(*p.shape, generator=g)
    opt = make(torch, params)
    for group in opt.param_groups:
        group["foreach"] = foreach
    return _times_ms(opt.step, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:
        torch = None
    header = f"{'workload':32} {'optimizer':13} {'tapeflow ms':>11} {'torch ms':>9} " \
             f"{'torch-foreach':>13} {'ratio':>6} {'ratio-fe':>8}  tapeflow min/median/p90"
    print(header)
    print("-" * len(header))
    for wname, shapes in WORKLOADS.items():
        for cname, (make_tf, make_torch) in CONFIGS.items():
            ours_times = bench_tapeflow(make_tf, shapes, args.repeats)
            ours, ours_spread = statistics.median(ours_times), spread_text(ours_times, digits=3)
            if torch is None:
                print(f"{wname:32} {cname:13} {ours:11.3f} {'-':>9} {'-':>13} {'':15} "
                      f"{ours_spread}")
                continue
            plain = statistics.median(bench_torch(torch, make_torch, shapes, args.repeats,
                                                  foreach=False))
            fe = statistics.median(bench_torch(torch, make_torch, shapes, args.repeats,
                                               foreach=True))
            print(f"{wname:32} {cname:13} {ours:11.3f} {plain:9.3f} {fe:13.3f} "
                  f"{ours / plain:6.2f} {ours / fe:8.2f}  {ours_spread}")


if __name__ == "__main__":
    main()
