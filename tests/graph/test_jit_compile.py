"""tf.function(jit_compile=True): trees of elementwise ops, ending in a reduction or not, run as
one compiled loop each, with the same results and gradients, no arrays between the ops, and the
loops cached on disk."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.kernels import jit_cluster
from tapeflow.ops import jit_ops
from tapeflow.testing import check_grads

pytestmark = pytest.mark.skipif(jit_cluster._jit._numba is None, reason="numba not installed")
rng = np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="module")
def cache_dir(tmp_path_factory):
    """One cache for the module (its loops are compiled once), away from the user's."""
    folder = tmp_path_factory.mktemp("jit")
    before = os.environ.get("TAPEFLOW_JIT_CACHE")
    os.environ["TAPEFLOW_JIT_CACHE"] = str(folder)
    yield folder
    if before is None:
        del os.environ["TAPEFLOW_JIT_CACHE"]
    else:
        os.environ["TAPEFLOW_JIT_CACHE"] = before


def _clusters(fn, *args):
    return [n for n in fn.get_concrete_function(*args).graph.nodes
            if n.op is jit_ops._jit_cluster]


def _layer(x, w, b):
    h = tf.nn.relu(tf.matmul(x, w) * 1.5 + b)  # (a bias add right on the product is fused
    # into it, ``fuse``: here the cluster takes it)
    return tf.sigmoid(h * 2.0 - 1.0) / 3.0 + tf.math.rsqrt(h + 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_values_as_the_graph_and_eager(dtype):
    x, w, b = (tf.constant(rng.standard_normal(s).astype(dtype)) for s in ((6, 4), (4, 5), (5,)))
    jit = tf.function(_layer, jit_compile=True)
    got = jit(x, w, b).numpy()
    np.testing.assert_allclose(got, tf.function(_layer)(x, w, b).numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got, _layer(x, w, b).numpy(), rtol=1e-6, atol=1e-7)
    (cluster,) = _clusters(jit, x, w, b)  # everything after the product: one loop
    program = cluster.attrs["program"]
    kinds = program.kinds
    assert kinds.count("full") == kinds.count("row") == 1 and set(kinds) == {"full", "row",
                                                                           "scalar"}
    assert len(program.steps) == 10  # h = relu(xw * 1.5 + b) is read twice, inside
    report = jit.get_concrete_function(x, w, b).optimization_report()
    assert "jit_cluster: compiled 1 clusters of 10 ops" in report


def test_a_column_broadcast_stays_outside_a_cluster():
    def f(x, col):
        a = x * 2.0
        return (a + 1.0) * a + x * col  # `a` read twice inside; col [n, 1] stays out

    x, col = tf.constant(rng.standard_normal((3, 4))), tf.constant(rng.standard_normal((3, 1)))
    jit = tf.function(f, jit_compile=True)
    np.testing.assert_allclose(jit(x, col).numpy(), f(x, col).numpy(), rtol=1e-12)
    clusters = _clusters(jit, x, col)
    assert [len(n.attrs["program"].steps) for n in clusters] == [4]  # x*2, +1, *, + ...
    assert all(t.shape.as_tuple() != (3, 1) for n in clusters for t in n.inputs)


def test_no_array_between_the_ops():
    x = tf.constant(rng.standard_normal((256, 1024)).astype(np.float32))  # 1 MB

    def f(x):
        return (x * 2.0 + 1.0) * (x - 3.0) + tf.sigmoid(x)

    def peak(fn):
        concrete = fn.get_concrete_function(x)
        concrete._exe.fn(x.numpy())
        tracemalloc.start()
        try:
            concrete._exe.fn(x.numpy())
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    one = x.numpy().nbytes
    assert peak(tf.function(f, jit_compile=True)) < 1.1 * one  # the output alone
    assert peak(tf.function(f)) > 1.9 * one  # NumPy holds two arrays at once


def test_gradients_match_finite_differences():
    x = tf.constant(rng.standard_normal((3, 4)))
    w = tf.Variable(rng.standard_normal((4, 5)))
    b = tf.Variable(rng.standard_normal(5))
    jit = tf.function(lambda x: tf.reduce_sum(_layer(x, w, b) ** 2), jit_compile=True)
    assert _clusters(jit, x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = jit(x)
    gx, gw, gb = tape.gradient(y, [x, w, b])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y2 = tf.reduce_sum(_layer(x, w, b) ** 2)
    for got, want in zip((gx, gw, gb), tape.gradient(y2, [x, w, b])):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)
    eps, xv = 1e-6, x.numpy()
    num = np.zeros_like(xv)
    for i in np.ndindex(xv.shape):
        d = np.zeros_like(xv)
        d[i] = eps
        num[i] = (float(jit(tf.constant(xv + d))) - float(jit(tf.constant(xv - d)))) / (2 * eps)
    np.testing.assert_allclose(gx.numpy(), num, rtol=1e-5, atol=1e-7)


def test_gradient_inside_a_compiled_training_step():
    w = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sigmoid(tf.matmul(x, w)) * 3.0 + 1.0)
        g = tape.gradient(loss, w)
        w.assign_sub(0.1 * g)
        return loss

    x = tf.constant(rng.standard_normal((2, 4)).astype(np.float32))
    start = w.numpy()
    plain = tf.function(step)(x).numpy()
    after_plain = w.numpy()
    w.assign(start)
    jitted = tf.function(step, jit_compile=True)
    np.testing.assert_allclose(jitted(x).numpy(), plain, rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), after_plain, rtol=1e-6)
    assert _clusters(jitted, x)


def test_set_jit_applies_to_calls_after_it():
    """set_jit is read when a function runs, as TF's auto-clustering: a function traced
    before it is recompiled (not retraced), one with its own jit_compile keeps it."""
    x = tf.constant(rng.standard_normal((2, 3)))
    before = tf.config.optimizer.get_jit()
    tf.config.optimizer.set_jit(False)
    f = tf.function(lambda x: tf.sigmoid(x) * 2.0 + 1.0)
    fixed = tf.function(lambda x: tf.sigmoid(x) * 2.0 + 1.0, jit_compile=False)
    want = f(x).numpy()
    fixed(x)
    assert not _clusters(f, x)
    try:
        tf.config.optimizer.set_jit(True)
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12)
        assert _clusters(f, x) and not _clusters(fixed, x)
        assert f.experimental_get_tracing_count() == 1
        assert _clusters(tf.function(lambda x: tf.sigmoid(x) * 2.0 + 1.0), x)
    finally:
        tf.config.optimizer.set_jit(before)
    assert not _clusters(f, x)


def test_numpy_path_without_numba(monkeypatch):
    x = tf.constant(rng.standard_normal((4, 3)).astype(np.float32))
    b = tf.constant(rng.standard_normal(3).astype(np.float32))
    f = tf.function(lambda x, b: tf.nn.relu(x + b) * 0.5, jit_compile=True)
    want = f(x, b).numpy()
    (node,) = _clusters(f, x, b)
    monkeypatch.setattr(jit_cluster, "compiled", lambda program: None)
    program = jit_cluster.Program(*[getattr(node.attrs["program"], k)
                                    for k in ("dtype", "shape", "kinds", "steps")])
    constants = [t.node.attrs["value"] for t in node.inputs[2:]]  # 0.5 and ReLU's 0
    np.testing.assert_array_equal(jit_cluster.run(program, x.numpy(), b.numpy(), *constants),
                                  want)


def test_loops_are_cached_on_disk_between_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("TAPEFLOW_JIT_CACHE", str(tmp_path))
    x = tf.constant(np.ones((2, 3), np.float32))
    f = tf.function(lambda x: tf.tanh(x) * 3.0 - 2.0, jit_compile=True)  # a loop no other test has
    f(x)
    assert len(list(tmp_path.glob("cluster_*.py"))) == 1
    script = textwrap.dedent("""
        import numpy as np, tapeflow as tf
        from tapeflow.kernels import jit_cluster
        f = tf.function(lambda x: tf.tanh(x) * 3.0 - 2.0, jit_compile=True)
        f(tf.constant(np.ones((2, 3), np.float32)))
        (loop,) = jit_cluster._compiled.values()
        print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))
    """)
    out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "0"]  # loaded from the cache, not compiled


REDUCTIONS = [
    (lambda y, t: tf.reduce_mean(tf.square(y - t)), (), "mean", "all"),
    (lambda y, t: tf.reduce_sum(tf.exp(y) * t + 1.0, axis=-1), (64,), "sum", "last"),
    (lambda y, t: tf.reduce_mean(tf.sigmoid(y) * t, axis=[1], keepdims=True), (64, 1), "mean",
     "last"),
]


@pytest.mark.parametrize("case", range(len(REDUCTIONS)))
def test_a_reduction_ends_a_cluster(case):
    fn, shape, reduce, over = REDUCTIONS[case]
    y, t = (tf.constant(rng.standard_normal((64, 32))) for _ in range(2))
    jit = tf.function(fn, jit_compile=True)
    (cluster,) = _clusters(jit, y, t)
    program = cluster.attrs["program"]
    assert (program.reduce, program.over, program.out_shape) == (reduce, over, shape)
    assert [n.op for n in jit.get_concrete_function(y, t).graph.nodes][-1] is jit_ops._jit_cluster
    got = jit(y, t)
    assert got.shape == shape
    np.testing.assert_allclose(got.numpy(), fn(y, t).numpy(), rtol=1e-12, atol=1e-12)
    with tf.GradientTape() as tape:
        tape.watch(y)
        loss = tf.reduce_sum(jit(y, t) * 1.5)
    with tf.GradientTape() as tape2:
        tape2.watch(y)
        loss2 = tf.reduce_sum(fn(y, t) * 1.5)
    np.testing.assert_allclose(tape.gradient(loss, y).numpy(), tape2.gradient(loss2, y).numpy(),
                               rtol=1e-12)


def test_reduction_sums_in_float64_and_stores_no_elementwise_array():
    y = tf.constant(np.full((1000, 1000), 0.1, np.float32))
    jit = tf.function(lambda y: tf.reduce_sum(y * 2.0 + 1.0), jit_compile=True)
    jit(y)
    tracemalloc.start()
    got = jit(y).numpy()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1e6  # an elementwise result would be 4 MB
    np.testing.assert_allclose(got, 1.2e6, rtol=1e-7)


def test_reductions_over_other_axes_stay_unfused():
    y = tf.constant(rng.standard_normal((8, 4)))
    jit = tf.function(lambda y: tf.reduce_sum(tf.exp(y) * 2.0 + 1.0, axis=0), jit_compile=True)
    ops = [n.op.name for n in jit.get_concrete_function(y).graph.nodes]
    assert ops[-1] == "Sum" and "JitCluster" in ops  # the elementwise tree alone
    np.testing.assert_allclose(jit(y).numpy(), np.sum(np.exp(y.numpy()) * 2 + 1, axis=0))


@pytest.mark.parametrize("case", range(len(REDUCTIONS)))
def test_reduction_numpy_path_without_numba(case, monkeypatch):
    fn, shape, _, _ = REDUCTIONS[case]
    y, t = (tf.constant(rng.standard_normal((64, 32)).astype(np.float32)) for _ in range(2))
    jit = tf.function(fn, jit_compile=True)
    want = jit(y, t).numpy()
    (node,) = _clusters(jit, y, t)
    monkeypatch.setattr(jit_cluster, "compiled", lambda program: None)
    program = node.attrs["program"]
    fresh = jit_cluster.Program(program.dtype, program.shape, program.kinds, program.steps,
                                program.reduce, program.over, program.out_shape)
    constants = [t.node.attrs["value"] for t in node.inputs[2:]]
    got = jit_cluster.run(fresh, y.numpy(), t.numpy(), *constants)
    assert got.shape == shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)  # float32 exp: numba vs NumPy


def _adam_in_ops(dtype):
    """bench_graph's W3 update written in ops: m and v assigned, then read back for p."""
    p = tf.Variable(np.random.default_rng(5).standard_normal((5, 7)).astype(dtype))
    m, v = (tf.Variable(np.zeros((5, 7), dtype)) for _ in range(2))
    step = tf.Variable(dtype(0))

    def update(g):
        t = step.assign_add(1.0)
        scale = 1e-3 * tf.sqrt(1.0 - tf.pow(0.999, t)) / (1.0 - tf.pow(0.9, t))
        m.assign(0.9 * m + 0.1 * g)
        v.assign(0.999 * v + 0.001 * tf.square(g))
        p.assign_sub(scale * m / (tf.sqrt(v) + 1e-7))
        return tf.reduce_sum(p)

    return update, (p, m, v, step)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_assigned_moments_and_the_update_are_one_loop_with_the_graphs_bits(dtype):
    """Adam in ops: the reads of m and v after their assignments take the assigned values, so
    m', v' and the update are one loop with three outputs; m and v are assigned after it. The
    ops are all exactly rounded (+, *, /, sqrt), so the loop gives the plain graph's bits."""
    gs = [tf.constant(rng.standard_normal((5, 7)).astype(dtype)) for _ in range(3)]
    results = {}
    for jit in (False, True):
        update, variables = _adam_in_ops(dtype)
        f = tf.function(update, jit_compile=jit)
        outs = [f(g).numpy() for g in gs]
        results[jit] = outs + [x.numpy() for x in variables]
        if jit:
            concrete = f.get_concrete_function(gs[0])
            multi = [n for n in concrete.graph.nodes if n.op is jit_ops._jit_cluster_n]
            assert len(multi) == 1 and len(multi[0].outputs) == 3
            assert "2 variable reads took the value assigned before them" in \
                concrete.optimization_report()
            order = [n for n in concrete.graph.nodes if n.op.variable in ("write", "assign")]
            assert all(concrete.graph.nodes.index(n) > concrete.graph.nodes.index(multi[0])
                       for n in order[1:])  # the writes of m, v and p come after the loop
    for a, b in zip(results[False], results[True]):
        np.testing.assert_array_equal(a, b)


def test_a_read_after_another_write_is_not_forwarded():
    v = tf.Variable(np.ones(6))

    def f(x):
        v.assign(x * 2.0)
        v.assign_add(x)  # v is now 3x: a read must see this, not the assigned 2x
        return v * 1.5 + 1.0

    x = tf.constant(rng.standard_normal(6))
    np.testing.assert_allclose(tf.function(f, jit_compile=True)(x).numpy(),
                               x.numpy() * 4.5 + 1.0, rtol=1e-12)


def test_a_multi_output_loop_gradient_replays_its_ops():
    v = tf.Variable(np.zeros((3, 4)))

    def f(x, y):
        v.assign(x * y + 2.0)
        return tf.sqrt(v * v + 1.0) / (x + 3.0)

    x, y = rng.random((3, 4)) + 0.5, rng.standard_normal((3, 4))
    concrete = tf.function(f, jit_compile=True).get_concrete_function(tf.constant(x),
                                                                     tf.constant(y))
    (node,) = [n for n in concrete.graph.nodes if n.op is jit_ops._jit_cluster_n]
    fed = {"x": x, "y": y}
    const = {i: t.node.attrs["value"] for i, t in enumerate(node.inputs) if t.node.op.name
             == "Const"}
    names = [t.node.name for i, t in enumerate(node.inputs) if i not in const]
    assert sorted(names) == ["x", "y"]

    def run(*free):
        it = iter(free)
        arrays = [const[i] if i in const else next(it) for i in range(len(node.inputs))]
        out, extra = apply(jit_ops._jit_cluster_n, *arrays, **node.attrs)
        return out * 2.0 + extra

    check_grads(run, [fed[n] for n in names])
