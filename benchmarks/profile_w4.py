"""Where the W4 DenseNet training step's time goes, against each op's own floor.

    python benchmarks/profile_w4.py [--runs 5] [--verbose]

Runs the step (batch 64, [64, 32, 32, 3], Adam) as a tf.function on one thread (intra- and
inter-op parallelism 1, BLAS pinned to one thread as always), times every node of the optimized
graph with this thread's CPU clock (so other processes on a shared machine inflate it far less
than wall time; caches and memory bandwidth they share still do), and adds the times up per op.
Each op's floor is the larger of its FLOPs (the ops' ``flops`` facts: direct-convolution counts,
so Winograd can run under it) at this core's float32 GEMM rate (1024^3 ``np.matmul``, measured
here) and the bytes of its inputs and outputs at this core's copy bandwidth (a 64 MB
``np.copyto``, read + write, measured here): "x floor" is how far each op is from that floor.
Outputs that are views (a split, a concatenation grown in place) count as bytes moved, so such
ops read under 1x.
The step on every core is compared with the all-core limit by ``bench_graph.py``'s W4 row.
"""

from __future__ import annotations

import argparse
import collections
import os
import time

import numpy as np

import tapeflow as tf
import tapeflow.graph  # noqa: F401  (registers tf.function)
from tapeflow.models import DenseNet


def core_rates() -> tuple[float, float]:
    """(float32 GEMM FLOP/s, copy bytes/s) of one core, best of several thread-CPU timings."""
    rng = np.random.default_rng(0)
    a, c = rng.random((1024, 1024), dtype=np.float32), np.empty((1024, 1024), np.float32)
    src, dst = rng.random(16 << 20, dtype=np.float32), np.empty(16 << 20, np.float32)

    def best(fn, repeat: int) -> float:
        fn()
        times = []
        for _ in range(repeat):
            start = time.thread_time()
            fn()
            times.append(time.thread_time() - start)
        return min(times)

    gemm = 2 * 1024 ** 3 / best(lambda: np.matmul(a, a, out=c), 7)
    copy = 2 * src.nbytes / best(lambda: np.copyto(dst, src), 7)
    return gemm, copy


def w4_step():
    """The W4 step as a tf.function and its arguments (as ``bench_graph.py``'s W4 worker)."""
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((64, 32, 32, 3)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, size=64))
    model, opt = DenseNet(input_shape=(32, 32, 3)), tf.keras.optimizers.Adam(1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step, (x, y)


def node_bytes(node) -> int:
    """Bytes of a node's inputs and outputs (static shapes; unknown ones count 0)."""
    total = 0
    for t in list(node.inputs) + list(node.outputs):
        n = t.shape.num_elements()
        total += 0 if n is None else n * t.dtype.size
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--verbose", action="store_true", help="also the 30 slowest nodes")
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    step, inputs = w4_step()
    step(*inputs)
    concrete = step.get_concrete_function(*inputs)
    stats = concrete.profile_stats(*inputs, runs=args.runs, clock=time.thread_time)
    gemm, copy = core_rates()
    per_op: dict = collections.defaultdict(lambda: [0.0, 0, 0.0, 0])
    for node, (seconds, _calls) in stats.items():
        row = per_op[node.op.name]
        row[0] += seconds / args.runs
        row[1] += 1
        row[2] += node.op.flops(node) if node.op.flops is not None else 0.0
        row[3] += node_bytes(node)
    total = sum(r[0] for r in per_op.values())
    floor_total = 0.0
    print(f"W4 step on one thread: {total * 1e3:.1f} ms CPU per step ({args.runs} runs); this "
          f"core: {gemm / 1e9:.0f} GFLOP/s float32 GEMM, {copy / 1e9:.1f} GB/s copy; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'op':<34}{'nodes':>6}{'CPU ms':>9}{'share':>7}{'GFLOP':>8}{'GFLOP/s':>9}{'MB':>8}"
          f"{'floor ms':>10}{'x floor':>9}")
    for name, (seconds, count, flops, nbytes) in sorted(per_op.items(), key=lambda kv: -kv[1][0]):
        floor = max(flops / gemm, nbytes / copy)
        floor_total += floor
        if seconds < 0.0005 * total:
            continue
        print(f"{name:<34}{count:>6}{seconds * 1e3:>9.2f}{seconds / total:>7.1%}"
              f"{flops / 1e9:>8.2f}{flops / seconds / 1e9 if flops else 0:>9.1f}"
              f"{nbytes / 1e6:>8.1f}{floor * 1e3:>10.2f}{seconds / floor if floor else 0:>9.2f}")
    print(f"{'all ops':<34}{len(stats):>6}{total * 1e3:>9.2f}{'':>7}{'':>8}{'':>9}{'':>8}"
          f"{floor_total * 1e3:>10.2f}{total / floor_total:>9.2f}")
    if args.verbose:
        from tapeflow.graph.printer import format_node

        for node, (seconds, _) in sorted(stats.items(), key=lambda kv: -kv[1][0])[:30]:
            print(f"{seconds / args.runs * 1e3:8.2f} ms  {format_node(node)[:140]}")


if __name__ == "__main__":
    main()
