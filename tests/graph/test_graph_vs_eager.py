"""A graph is never slower than eager (issue 25): every workload of
``benchmarks/bench_graph_vs_eager.py`` (../shared/workloads' W1-W5, W9, W10 and the model zoo's
training steps) as a `tf.function` runs no more kernels than its eager step, and, in the slow
suite, takes no longer (alternating rounds, a generous margin for a shared machine)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import bench_graph_vs_eager as bench  # noqa: E402

LIGHT = ["w1-mlp-inference", "w2-lstmcell-step", "w3-mlp-train-step", "zoo-mlp-step",
         "zoo-lstm-classifier-step"]
HEAVY = [name for name in bench.WORKLOADS if name not in LIGHT]


def _counts(name: str) -> tuple[int, int]:
    eager, function, args = bench.WORKLOADS[name]()
    eager_ops, graph_kernels = bench.kernel_counts(eager, function, args)
    assert eager_ops > 0 and graph_kernels > 0
    return eager_ops, graph_kernels


@pytest.mark.parametrize("name", LIGHT)
def test_graph_runs_no_more_kernels_than_eager(name):
    eager_ops, graph_kernels = _counts(name)
    assert graph_kernels <= eager_ops, (name, eager_ops, graph_kernels)


@pytest.mark.slow
@pytest.mark.parametrize("name", HEAVY)
def test_heavy_graph_runs_no_more_kernels_than_eager(name):
    eager_ops, graph_kernels = _counts(name)
    assert graph_kernels <= eager_ops, (name, eager_ops, graph_kernels)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(bench.WORKLOADS))
def test_graph_step_is_not_slower_than_eager(name):
    """Median over alternating rounds of graph / eager; 1.25 leaves room for a shared machine
    (the benchmark itself flags anything above 1)."""
    eager, function, args = bench.WORKLOADS[name]()
    res = bench.measure(eager, function, args, rounds=5, steps=3)
    assert res["ratio"] <= 1.25, (name, res["ratio"])
