"""Seed 004's timing loop, eager vs tf.function, on a quiet or a loaded machine (docs/threads.md).

    python benchmarks/bench_threads.py [--rounds 5] [--number 300] [--busy 2]

The seed's SequentialModel (Flatten, Dense(128, relu), Dropout, Dense(10)) called on a
[60, 28, 28] batch; eager and graph take turns, `rounds` times `number` calls each, in one
process. `--busy N` starts N busy-loop processes for the duration (a loaded machine). Prints
min / median / p90 per call and the graph / eager ratio of the medians.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import timeit

import tapeflow as tf


class SequentialModel(tf.keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.flatten = tf.keras.layers.Flatten(input_shape=(28, 28))
        self.dense_1 = tf.keras.layers.Dense(128, activation="relu")
        self.dropout = tf.keras.layers.Dropout(0.2)
        self.dense_2 = tf.keras.layers.Dense(10)

    def call(self, x):
        return self.dense_2(self.dropout(self.dense_1(self.flatten(x))))


def spread(times: list[float]) -> str:
    """min / median / p90 in microseconds."""
    s = sorted(times)
    p90 = s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]
    return f"{s[0] * 1e6:8.0f} {statistics.median(s) * 1e6:8.0f} {p90 * 1e6:8.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=300)
    parser.add_argument("--busy", type=int, default=0, help="busy-loop processes to start")
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    try:
        x = tf.random.uniform([60, 28, 28])
        eager = SequentialModel()
        graph = tf.function(eager)
        eager(x), graph(x)
        times: dict[str, list[float]] = {"eager": [], "tf.function": []}
        for _ in range(args.rounds):
            for name, fn in (("eager", eager), ("tf.function", graph)):
                times[name].append(timeit.timeit(lambda fn=fn: fn(x), number=args.number)
                                   / args.number)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print(f"seed 004 loop, {args.busy} busy loops, {args.rounds} rounds x {args.number} calls")
    print(f"{'mode':<12} {'min us':>8} {'median':>8} {'p90':>8}")
    for name, t in times.items():
        print(f"{name:<12} {spread(t)}")
    ratio = statistics.median(times["tf.function"]) / statistics.median(times["eager"])
    print(f"graph / eager: {ratio:.2f}")


if __name__ == "__main__":
    main()
