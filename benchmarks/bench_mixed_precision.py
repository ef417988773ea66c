"""Mixed precision on the main job's model: the training step of `tapeflow train`'s DenseNet
(batch 64, Adam) under float32, mixed_float16 and mixed_bfloat16, timed in alternating rounds in
one process (the machine is shared: report the ratio to float32, not the milliseconds).

    PYTHONPATH=src python benchmarks/bench_mixed_precision.py [--rounds 5] [--steps 5]

Accuracy after full training comes from `tapeflow train densenet --dtype-policy <policy>`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

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
    for _ in range(args.rounds):
        for policy, model in models.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                model.train_on_batch(x, y)
            times[policy].append((time.perf_counter() - start) / args.steps)
    base = statistics.median(times["float32"])
    for policy in POLICIES:
        median = statistics.median(times[policy])
        print(f"{policy:15s} {median * 1e3:8.1f} ms/step  {median / base:5.2f}x float32")


if __name__ == "__main__":
    main()
