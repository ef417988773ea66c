"""W9 (Transformer encoder) and W10 (Embedding + LSTM) training steps: tapeflow eager, tapeflow
tf.function and PyTorch eager side by side in one process (issue 25).

    python benchmarks/bench_w9_w10.py [--only w9|w10] [--rounds 7] [--steps 3] [--torch-threads 1]

The models are ../shared/workloads' tf_models2.py / torch_models2.py: W9 two encoder blocks
(MultiHeadAttention 4 heads, LayerNormalization, feed-forward 256; batch 32 of 64 tokens x
128), W10 Embedding(1000, 64) -> LSTM(128) -> Dense(10), batch 64 of 50 tokens; one Adam step
each. After warm-up the variants take turns, `steps` steps each per round, in an order that
rotates every round (on a shared machine adjacent rounds see the same load). Prints each
variant's min / median / p90 step and the median over rounds of its ratio to PyTorch's
median step in the same round.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

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


def tapeflow_steps(workload: str) -> dict:
    import tapeflow as tf

    steps = {}
    for name, wrap in (("tapeflow eager", lambda f: f), ("tapeflow tf.function", tf.function)):
        run = tapeflow_step(workload, wrap)
        steps[name] = lambda run=run: run().numpy()
    return steps


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


def spread_ms(times: list[float]) -> str:
    """min / median / p90 of step times, in ms."""
    s = sorted(times)
    p90 = s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]
    return f"{s[0] * 1e3:7.1f} {statistics.median(s) * 1e3:7.1f} {p90 * 1e3:7.1f}"


def bench(workload: str, rounds: int, steps: int, torch_threads: int | None) -> None:
    variants = tapeflow_steps(workload)
    try:
        variants["PyTorch eager"] = torch_step(workload, torch_threads)
    except ImportError:
        print("(PyTorch not installed: tapeflow only)")
    first = {}
    for name, fn in variants.items():
        start = time.perf_counter()
        fn()
        first[name] = time.perf_counter() - start
        for _ in range(2):
            fn()
    names = list(variants)
    times: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        medians = {}
        for name in names[r % len(names):] + names[:r % len(names)]:
            ts = []
            for _ in range(steps):
                start = time.perf_counter()
                variants[name]()
                ts.append(time.perf_counter() - start)
            times[name] += ts
            medians[name] = statistics.median(ts)
        if "PyTorch eager" in medians:
            for name in names:
                ratios[name].append(medians[name] / medians["PyTorch eager"])
    title = {"w9": "W9 Transformer step (2 blocks, batch 32x64x128, Adam)",
             "w10": "W10 Embedding+LSTM(128) step (batch 64x50, Adam)"}[workload]
    print(f"{title}: {rounds} rounds x {steps} steps")
    print(f"  {'variant':22s} {'min ms':>7} {'median':>7} {'p90':>7}  {'x PyTorch':>9}  first")
    for name in names:
        ratio = f"{statistics.median(ratios[name]):9.2f}" if ratios[name] else " " * 9
        print(f"  {name:22s} {spread_ms(times[name])}  {ratio}  {first[name]:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("w9", "w10"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads (default: PyTorch's own, one per core)")
    args = parser.parse_args()
    for workload in ("w9", "w10"):
        if args.only in (None, workload):
            bench(workload, args.rounds, args.steps, args.torch_threads)


if __name__ == "__main__":
    main()
