"""A graph is never slower than eager: each workload's step eagerly and as a `tf.function`,
side by side in one process (issue 25, third point).

    python benchmarks/bench_graph_vs_eager.py [--only w9,zoo-mlp] [--rounds 7] [--steps 3]

Workloads: ../shared/workloads' W1-W5, W9, W10 (W4 and W5 at batch 16 and 64, to keep a run
short) and the model zoo's training steps (``tapeflow.models``). The two variants take turns,
`steps` calls each per round, the order alternating from round to round; printed per variant:
min / median / p90 of the calls in ms, then the median over rounds of graph / eager (each
round's medians: adjacent calls see the same machine speed) and the kernels each runs per step
(eager: ops dispatched; graph: nodes of the optimized graph, constants, placeholders and
variable reads left out). A ratio above 1 is marked SLOWER: a bug to find.
``tests/graph/test_graph_vs_eager.py`` checks the same workloads (kernel counts in CI, timing
in the slow suite).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread  # noqa: E402

# nodes that run no kernel of their own (the graph's inputs and reads, as eager's are free)
NOT_KERNELS = {"Placeholder", "Const", "ReadVariableOp", "NoOp", "Identity"}


def _keras_step(tf, model, loss_fn, optimizer, x, y) -> Callable:
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def _pair(tf, make: Callable[[], Callable]) -> tuple:
    """(eager step, graph step, no arguments) over two separately made models."""
    return make(), tf.function(make()), ()


def _seed_micro(name: str) -> tuple:
    import bench_graph

    import tapeflow as tf

    fn, args = bench_graph.__dict__[f"{name}_tapeflow"]()  # the step written with raw ops
    return fn, tf.function(fn), args


def _sparse_xent(tf):
    return tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def _densenet(batch: int = 16) -> tuple:
    import tapeflow as tf
    from tapeflow.models import DenseNet

    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((batch, 32, 32, 3)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, batch))

    def make():
        tf.random.set_seed(0)
        return _keras_step(tf, DenseNet(input_shape=(32, 32, 3)), _sparse_xent(tf),
                           tf.keras.optimizers.Adam(1e-3), x, y)

    return _pair(tf, make)


def _cifar(batch: int = 64) -> tuple:
    import tapeflow as tf
    from tapeflow.models import CifarCNN

    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((batch, 32, 32, 3)).astype(np.float32))
    y = tf.constant(np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)])

    def make():
        tf.random.set_seed(0)
        loss = tf.keras.losses.CategoricalCrossentropy(from_logits=True)
        return _keras_step(tf, CifarCNN(), loss, tf.keras.optimizers.RMSprop(1e-3), x, y)

    return _pair(tf, make)


def _zoo_mlp(batch: int = 60) -> tuple:
    import tapeflow as tf
    from tapeflow.models import MLP

    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((batch, 28, 28)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, batch))

    def make():
        tf.random.set_seed(0)
        return _keras_step(tf, MLP(), _sparse_xent(tf), tf.keras.optimizers.Adam(1e-3), x, y)

    return _pair(tf, make)


def _zoo_lstm(batch: int = 32, length: int = 40) -> tuple:
    import tapeflow as tf
    from tapeflow.models import LSTMClassifier

    rng = np.random.default_rng(0)
    x = tf.constant(rng.integers(0, 500, (batch, length)).astype(np.int32))
    y = tf.constant(rng.integers(0, 2, batch))

    def make():
        tf.random.set_seed(0)
        return _keras_step(tf, LSTMClassifier(500, length), _sparse_xent(tf),
                           tf.keras.optimizers.Adam(1e-3), x, y)

    return _pair(tf, make)


def _zoo_revnet(batch: int = 16) -> tuple:
    import tapeflow as tf
    from tapeflow.models import RevNet

    tf.random.set_seed(0)
    x = tf.random.normal((batch, 32, 32, 3))
    labels = tf.constant(np.arange(batch) % 10)

    def make():
        model = RevNet(filters=16, num_blocks=2)
        model(x[:1])
        return lambda: model.compute_gradients(x, labels)

    return _pair(tf, make)


def _w9_w10(name: str) -> tuple:
    import bench_w9_w10

    import tapeflow as tf

    return bench_w9_w10.tapeflow_step(name), bench_w9_w10.tapeflow_step(name, tf.function), ()


# name -> () -> (eager step, the same step as a tf.function, its arguments)
WORKLOADS: dict[str, Callable[[], tuple]] = {
    "w1-mlp-inference": lambda: _seed_micro("w1"),
    "w2-lstmcell-step": lambda: _seed_micro("w2"),
    "w3-mlp-train-step": lambda: _seed_micro("w3"),
    "w4-densenet-step-b16": _densenet,
    "w5-cifar-cnn-step-b64": _cifar,
    "w9-transformer-step": lambda: _w9_w10("w9"),
    "w10-lstm-step": lambda: _w9_w10("w10"),
    "zoo-mlp-step": _zoo_mlp,
    "zoo-lstm-classifier-step": _zoo_lstm,
    "zoo-revnet-step": _zoo_revnet,
}


def kernel_counts(eager: Callable, function, args: tuple) -> tuple[int, int]:
    """(ops one eager step dispatches, kernel nodes of the graph step's optimized graph)."""
    from tapeflow.framework import dispatch

    concrete = function.get_concrete_function(*args)
    counted: list[int] = []
    hook = dispatch.check_numerics_hook  # the one per-op callback dispatch has
    dispatch.check_numerics_hook = lambda op, outs: counted.append(1)
    try:
        eager(*args)
    finally:
        dispatch.check_numerics_hook = hook
    return len(counted), sum(n.op.name not in NOT_KERNELS for n in concrete.graph.nodes)


def _result(out):
    """Waits for the step's values (a tensor's or a structure's first tensor's NumPy value)."""
    while isinstance(out, (tuple, list)) and out:
        out = out[0]
    return out.numpy() if hasattr(out, "numpy") else out


def measure(eager: Callable, function: Callable, args: tuple, rounds: int, steps: int) -> dict:
    """Alternating rounds: each variant's step times (ms) and per-round graph/eager ratios."""
    def run_eager():
        return _result(eager(*args))

    def graph():
        return _result(function(*args))

    for fn in (run_eager, graph, run_eager, graph):
        fn()
    times: dict[str, list[float]] = {"eager": [], "graph": []}
    ratios = []
    for r in range(rounds):
        medians = {}
        for name in ("eager", "graph") if r % 2 == 0 else ("graph", "eager"):
            fn = run_eager if name == "eager" else graph
            ts = []
            for _ in range(steps):
                start = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - start) * 1e3)
            times[name] += ts
            medians[name] = statistics.median(ts)
        ratios.append(medians["graph"] / medians["eager"])
    return {"times": times, "ratio": statistics.median(ratios)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated workload names: " + ", ".join(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(WORKLOADS)
    print(f"{'workload':26s} {'eager min/med/p90 ms':>24s} {'graph min/med/p90 ms':>24s} "
          f"{'graph/eager':>11s} {'kernels e/g':>12s}")
    for name in names:
        eager, function, fn_args = WORKLOADS[name]()
        res = measure(eager, function, fn_args, args.rounds, args.steps)
        ops = kernel_counts(eager, function, fn_args)
        cols = ["{:7.2f} {:7.2f} {:7.2f}".format(*spread(res["times"][v]))
                for v in ("eager", "graph")]
        flag = "  SLOWER" if res["ratio"] > 1.0 else ""
        print(f"{name:26s} {cols[0]:>24s} {cols[1]:>24s} {res['ratio']:11.2f} "
              f"{ops[0]:>5d}/{ops[1]:<5d}{flag}", flush=True)


if __name__ == "__main__":
    main()
