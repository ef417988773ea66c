"""Conv / pool / batch-norm cost on the W4 DenseNet and W5 CIFAR CNN shapes: tapeflow vs PyTorch.

Each row times forward + backward (input and filter gradients) of one layer (W4 at batch 64,
SAME; W5 at batch 256 with its own padding), as a training step runs it, through the public API
with a GradientTape. Medians of repeats after warm-up; ratio = tapeflow / PyTorch (lower is
better); the last two columns are tapeflow's and PyTorch's min / p90 (the spread around the
median: the least and the most disturbed runs on a shared machine).

    python benchmarks/bench_conv.py [--repeats 7] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # see the note printed at the end

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread, timed  # noqa: E402

BATCH = 64
# (spatial size, input channels, output channels, kernel): the W4 DenseNet's convolutions
CONVS = [(32, 3, 16, 3)] + [(32, c, 12, 3) for c in (16, 28, 40, 52)] + [(32, 64, 64, 1)] + [
    (16, c, 12, 3) for c in (64, 76, 88, 100)] + [(16, 112, 112, 1)] + [
    (8, c, 12, 3) for c in (112, 124, 136, 148)]
W5_BATCH = 256
# (spatial size, input channels, output channels, padding): the W5 CIFAR CNN's 3x3 convolutions
W5_CONVS = [(32, 3, 32, "SAME"), (32, 32, 32, "VALID"), (15, 32, 64, "SAME"),
            (15, 64, 64, "VALID")]


def median_ms(fn, repeats: int) -> float:
    """Median wall time of `fn` in ms after two warm-up calls; (min, p90) go to SPREADS."""
    low, median, p90 = spread(timed(fn, repeats, warmup=2))
    SPREADS.append((low * 1e3, p90 * 1e3))
    return median * 1e3


SPREADS: list[tuple[float, float]] = []


def _spreads(*pairs: tuple[float, float]) -> str:
    return " ".join(f"{lo:7.2f}/{hi:<7.2f}" for lo, hi in pairs)


def ours_conv(size, cin, cout, k, batch=BATCH, padding="SAME"):
    rng = np.random.default_rng(0)
    out = size if padding == "SAME" else size - k + 1
    x = tf.constant(rng.standard_normal((batch, size, size, cin)).astype(np.float32))
    w = tf.Variable(rng.standard_normal((k, k, cin, cout)).astype(np.float32))
    cot = tf.constant(rng.standard_normal((batch, out, out, cout)).astype(np.float32))

    def step():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.conv2d(x, w, 1, padding)
        return tape.gradient(y, [x, w], output_gradients=cot)

    return step


def torch_conv(torch, size, cin, cout, k, channels_last, batch=BATCH, padding="SAME"):
    out = size if padding == "SAME" else size - k + 1
    x = torch.randn(batch, cin, size, size, requires_grad=True)
    conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2 if padding == "SAME" else 0, bias=False)
    if channels_last:
        x = x.detach().to(memory_format=torch.channels_last).requires_grad_()
        conv = conv.to(memory_format=torch.channels_last)
    cot = torch.randn(batch, cout, out, out)

    def step():
        x.grad = None
        conv(x).backward(cot)

    return step


def ours_layer(kind, size, c):
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((BATCH, size, size, c)).astype(np.float32))
    scale, offset = tf.Variable(tf.ones([c])), tf.Variable(tf.zeros([c]))

    def step():
        with tf.GradientTape() as tape:
            tape.watch(x)
            if kind == "bn+relu":
                y = tf.nn.relu(tf.nn.fused_batch_norm(x, scale, offset)[0])
            elif kind == "avgpool2":
                y = tf.nn.avg_pool2d(x, 2, 2, "VALID")
            else:
                y = tf.nn.max_pool2d(x, 2, 2, "VALID")
            loss = tf.reduce_sum(y)
        return tape.gradient(loss, [x, scale, offset])

    return step


def torch_layer(torch, kind, size, c):
    x = torch.randn(BATCH, c, size, size, requires_grad=True)
    bn = torch.nn.BatchNorm2d(c)

    def step():
        x.grad = None
        if kind == "bn+relu":
            y = torch.relu(bn(x))
        elif kind == "avgpool2":
            y = torch.nn.functional.avg_pool2d(x, 2)
        else:
            y = torch.nn.functional.max_pool2d(x, 2)
        y.sum().backward()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    header = f"{'layer':34s} {'tapeflow ms':>12s} {'torch ms':>9s} {'ratio':>6s} " \
             f"{'torch CL ms':>12s} {'ratio':>6s} {'tapeflow min/p90':>15s} {'torch min/p90':>15s}"
    print(header)
    totals = [0.0, 0.0, 0.0]
    mins = [(0.0, 0.0), (0.0, 0.0)]
    for size, cin, cout, k in CONVS:
        ours = median_ms(ours_conv(size, cin, cout, k), args.repeats)
        theirs = median_ms(torch_conv(torch, size, cin, cout, k, False), args.repeats)
        cl = median_ms(torch_conv(torch, size, cin, cout, k, True), args.repeats)
        totals = [totals[0] + ours, totals[1] + theirs, totals[2] + cl]
        mins = [(m[0] + v[0], m[1] + v[1]) for m, v in zip(mins, SPREADS[-3:-1])]
        name = f"conv{k}x{k} {size}x{size} {cin}->{cout} fwd+bwd"
        print(f"{name:34s} {ours:12.2f} {theirs:9.2f} {ours / theirs:6.2f} {cl:12.2f} "
              f"{ours / cl:6.2f} {_spreads(*SPREADS[-3:-1])}")
    print(f"{'all W4 convs':34s} {totals[0]:12.2f} {totals[1]:9.2f} "
          f"{totals[0] / totals[1]:6.2f} {totals[2]:12.2f} {totals[0] / totals[2]:6.2f} "
          f"{_spreads(*mins)}")
    totals = [0.0, 0.0, 0.0]
    mins = [(0.0, 0.0), (0.0, 0.0)]
    for size, cin, cout, padding in W5_CONVS:
        shape = {"batch": W5_BATCH, "padding": padding}
        ours = median_ms(ours_conv(size, cin, cout, 3, **shape), args.repeats)
        theirs = median_ms(torch_conv(torch, size, cin, cout, 3, False, **shape), args.repeats)
        cl = median_ms(torch_conv(torch, size, cin, cout, 3, True, **shape), args.repeats)
        totals = [totals[0] + ours, totals[1] + theirs, totals[2] + cl]
        mins = [(m[0] + v[0], m[1] + v[1]) for m, v in zip(mins, SPREADS[-3:-1])]
        name = f"W5 conv3x3 {size}x{size} {cin}->{cout} {padding}"
        print(f"{name:34s} {ours:12.2f} {theirs:9.2f} {ours / theirs:6.2f} {cl:12.2f} "
              f"{ours / cl:6.2f} {_spreads(*SPREADS[-3:-1])}")
    print(f"{'all W5 convs (batch 256)':34s} {totals[0]:12.2f} {totals[1]:9.2f} "
          f"{totals[0] / totals[1]:6.2f} {totals[2]:12.2f} {totals[0] / totals[2]:6.2f} "
          f"{_spreads(*mins)}")
    for kind, size, c in [("bn+relu", 32, 64), ("bn+relu", 16, 112), ("avgpool2", 32, 64),
                          ("maxpool2", 32, 64)]:
        ours = median_ms(ours_layer(kind, size, c), args.repeats)
        theirs = median_ms(torch_layer(torch, kind, size, c), args.repeats)
        name = f"{kind} {size}x{size}x{c} fwd+bwd"
        print(f"{name:34s} {ours:12.2f} {theirs:9.2f} {ours / theirs:6.2f} {'':19s} "
              f"{_spreads(*SPREADS[-2:])}")
    print("\nNOTE: OPENBLAS_THREAD_TIMEOUT=4 (set above, before NumPy loads) stops OpenBLAS's "
          "idle threads from spinning ~0.1 s after each product, which otherwise steals a core "
          "from the next kernel on a 2-core machine.")


if __name__ == "__main__":
    main()
