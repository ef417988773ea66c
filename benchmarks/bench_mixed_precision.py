"""Mixed precision on the main job's model: the training step of `tapeflow train`'s DenseNet
(batch 64, Adam) under float32, mixed_float16 and mixed_bfloat16, timed in alternating rounds in
one process (the machine is shared: report the ratio to float32, not the milliseconds). Each
policy's min / median / p90 step, and the median over rounds of its ratio to float32.

    PYTHONPATH=src python benchmarks/bench_mixed_precision.py [--rounds 5] [--steps 5]

Accuracy after full training comes from `tapeflow train densenet --dtype-policy <policy>`.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from timing import spread_text, timed

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def build(policy: str):
    from tapeflow import keras
    from tapeflow.cli import _build

    keras.mixed_precision.set_global_policy(policy)
    try:
        model, _ = _build("densenet")
        if policy != "float32":
            model = keras.Sequential([model, keras.layers.Activation("linear",
                                                                     dtype="float32")])
        model.compile(keras.optimizers.Adam(1e-3),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    finally:
        keras.mixed_precision.set_global_policy(None)
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    import tapeflow as tf

    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.random((64, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    models = {p: build(p) for p in POLICIES}
    for model in models.values():
        model.train_on_batch(x, y)  # trace
    times: dict[str, list[float]] = {p: [] for p in POLICIES}
    ratios: dict[str, list[float]] = {p: [] for p in POLICIES}
    for r in range(args.rounds):
        medians = {}
        for policy in POLICIES[r % 3:] + POLICIES[:r % 3]:  # the order rotates every round
            ts = timed(lambda m=models[policy]: m.train_on_batch(x, y), args.steps)
            times[policy] += ts
            medians[policy] = statistics.median(ts)
        for policy in POLICIES:
            ratios[policy].append(medians[policy] / medians["float32"])
    print(f"{'policy':15s} {'min / median / p90 ms':>22s}  x float32")
    for policy in POLICIES:
        print(f"{policy:15s} {spread_text(times[policy], 1e3, 1):>22s}  "
              f"{statistics.median(ratios[policy]):9.2f}")


if __name__ == "__main__":
    main()
