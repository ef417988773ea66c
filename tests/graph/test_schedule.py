"""Two-thread list scheduling (graph/schedule.py): what goes to the worker, and effects in order."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph import schedule
from tapeflow.graph.ir import CONST, PLACEHOLDER


@pytest.fixture
def two_threads():
    before = tf.config.threading.get_inter_op_parallelism_threads()
    tf.config.threading.set_inter_op_parallelism_threads(2)
    yield
    tf.config.threading.set_inter_op_parallelism_threads(before)


def _plan(fn, *args):
    """The traced, optimized graph's runnable nodes and each one's producers, as codegen
    hands them to ``two_threads``."""
    graph = tf.function(fn).get_concrete_function(*args).graph
    plan = [n for n in graph.nodes if n.op not in (CONST, PLACEHOLDER)]
    index = {id(t): i for i, n in enumerate(plan) for t in n.outputs}
    producers = [[index[id(t)] for t in n.inputs if id(t) in index] for n in plan]
    return plan, producers


def _check_order(order, plan, producers):
    """Every node once, each after its producers."""
    assert sorted(id(n) for n, _ in order) == sorted(id(n) for n in plan)
    seen = set()
    position = {id(n): i for i, n in enumerate(plan)}
    for node, _ in order:
        assert all(id(plan[p]) in seen for p in producers[position[id(node)]]), node
        seen.add(id(node))


def test_two_independent_chains_take_one_thread_each():
    a, b = tf.ones([256, 256]), tf.ones([256, 256])
    plan, producers = _plan(lambda a, b: (tf.matmul(tf.matmul(a, a), a),
                                          tf.matmul(tf.matmul(b, b), b)), a, b)
    order = schedule.two_threads(plan, producers, lambda n: True)
    _check_order(order, plan, producers)
    assert sum(on_worker for _, on_worker in order) == 2  # one chain of two products
    assert [n.op.name for n, w in order if w] == ["MatMul", "MatMul"]


def test_a_chain_stays_on_the_calling_thread():
    x = tf.ones([256, 256])
    plan, producers = _plan(lambda x: tf.matmul(tf.matmul(tf.matmul(x, x), x), x), x)
    order = schedule.two_threads(plan, producers, lambda n: True)
    assert not any(on_worker for _, on_worker in order)


def test_a_side_branch_goes_to_the_worker_while_the_caller_keeps_the_long_path():
    x = tf.ones([256, 256])

    def f(x):
        side = tf.matmul(x, x, transpose_b=True)  # read only at the end, like a weight gradient
        main = x
        for _ in range(4):
            main = tf.matmul(main, x)
        return main + side

    plan, producers = _plan(f, x)
    order = schedule.two_threads(plan, producers, lambda n: True)
    _check_order(order, plan, producers)
    on_worker = [n for n, w in order if w]
    assert len(on_worker) == 1 and on_worker[0].op.name == "MatMul"
    assert on_worker[0].attrs["transpose_b"]  # the side product


@pytest.mark.parametrize("window_s, most_on_worker", [(1e-3, 1), (10.0, 8)])
def test_the_window_bounds_how_far_a_later_chain_runs_ahead(monkeypatch, window_s,
                                                            most_on_worker):
    x = tf.ones([256, 256])

    def f(x):
        first = second = x
        for _ in range(8):
            first = tf.matmul(first, x)
        for _ in range(8):  # independent, but after the first chain in the plan
            second = tf.matmul(second, x, transpose_b=True)
        return first + second

    monkeypatch.setattr(schedule, "WINDOW_S", window_s)
    plan, producers = _plan(f, x)
    order = schedule.two_threads(plan, producers, lambda n: True)
    _check_order(order, plan, producers)
    # unbounded, the second chain runs beside the first; bounded, it waits for the first to
    # be nearly done (its first product may start beside the first chain's last)
    assert sum(w for _, w in order) == most_on_worker


def test_window_points_at_the_last_node_far_enough_back(monkeypatch):
    monkeypatch.setattr(schedule, "WINDOW_S", 1.0)
    costs = [0.5] * 6  # node i begins at i/2 windows, ends at (i+1)/2
    assert schedule._window(costs) == [-1, -1, -1, 0, 1, 2]


def test_stateful_nodes_never_go_to_the_worker_and_keep_their_order_per_variable():
    v, w = tf.Variable(1.0), tf.Variable(2.0)

    def f():
        r0 = v.read_value()
        v.assign(5.0)
        r1 = v.read_value()
        w.assign_add(1.0)
        tf.print("effect")
        r2 = w.read_value()
        return r0 + r1 + r2

    plan, producers = _plan(f)
    deps = schedule._effect_deps(plan)
    name = {id(n): i for i, n in enumerate(plan)}
    kinds = [(n.op.name, n.attrs.get("var")) for n in plan]
    reads_v = [i for i, (k, var) in enumerate(kinds) if k == "ReadVariableOp" and var is v]
    write_v = next(i for i, (k, var) in enumerate(kinds) if k == "AssignVariableOp")
    write_w = next(i for i, (k, _) in enumerate(kinds) if k == "AssignAddVariableOp")
    printed = next(i for i, (k, _) in enumerate(kinds) if k == "PrintV2")
    read_w = next(i for i, (k, var) in enumerate(kinds) if k == "ReadVariableOp" and var is w)
    assert reads_v[0] in deps[write_v]  # write after the read before it
    assert write_v in deps[reads_v[1]]  # read after the write before it
    assert write_v not in deps[write_w]  # different variables need no order
    assert {write_v, write_w} <= set(deps[printed])  # other effects: after all of them
    assert printed in deps[read_w]
    order = schedule.two_threads(plan, producers, lambda n: True)
    assert not any(w and n.op.stateful for n, w in order)
    assert len(name) == len(plan)


def test_effects_and_values_match_in_order_execution(two_threads, monkeypatch):
    monkeypatch.setattr(schedule, "HANDOFF", 0.0)  # hand over even tiny kernels
    monkeypatch.setattr(schedule, "MIN_WORKER_S", 0.0)
    rng = np.random.default_rng(0)
    a = tf.constant(rng.standard_normal((64, 64)))
    v = tf.Variable(tf.zeros([64, 64], tf.float64))

    @tf.function
    def f(a):
        v.assign(a)
        first = tf.matmul(v.read_value(), a)  # reads a, before the update below
        v.assign_add(tf.matmul(a, a))
        second = tf.nn.relu(tf.matmul(v.read_value(), a) - 1.0)
        return first, second

    first, second = f(a)
    assert ".get()" in f.get_concrete_function(a).code
    an = a.numpy()
    np.testing.assert_allclose(first.numpy(), an @ an, rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), np.maximum((an + an @ an) @ an - 1.0, 0),
                               rtol=1e-12)
    np.testing.assert_allclose(v.numpy(), an + an @ an, rtol=1e-12)


def test_timeline_fills_the_first_gap_that_fits():
    line = schedule._Timeline()
    line.insert(0.0, 1.0)
    line.insert(3.0, 4.0)
    assert line.earliest(0.0, 2.0) == 1.0  # the gap 1..3 holds 2 seconds
    assert line.earliest(0.0, 2.5) == 4.0  # too long for it: after the last
    assert line.earliest(1.5, 1.0) == 1.5
    assert line.earliest(5.0, 1.0) == 5.0


def test_estimates_rank_convolutions_by_their_flops():
    x, w = tf.ones([8, 16, 16, 32]), tf.ones([3, 3, 32, 32])
    plan, _ = _plan(lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"), x, w)
    conv = next(n for n in plan if n.op.name == "Conv2D")
    flops = 2 * 8 * 16 * 16 * 32 * 9 * 32
    assert schedule.estimate(conv) == pytest.approx(schedule.NODE_S + flops
                                                    / schedule.FLOPS_PER_S)


def test_loop_bodies_and_dataset_maps_hand_over_too_and_match_in_order(monkeypatch):
    """Sub-graphs (a while_loop body, run by the caller) and graphs run on data-pipeline
    threads share the one worker; results equal running every node in order."""
    rng = np.random.default_rng(1)
    a = tf.constant(rng.standard_normal((256, 256)) / 16)

    def f(a):
        def body(i, x, y):  # two independent products per iteration
            return i + 1, tf.nn.relu(tf.matmul(x, a)), tf.tanh(tf.matmul(y, a, transpose_b=True))

        _, x, y = tf.while_loop(lambda i, x, y: i < 3, body, (0, a, a))
        return x + y

    from tapeflow.graph import interop

    launched = []
    launch = interop.launch
    monkeypatch.setattr(interop, "launch",
                        lambda *args, **kw: launched.append(1) or launch(*args, **kw))
    before = tf.config.threading.get_inter_op_parallelism_threads()
    try:
        results = {}
        for threads in (2, 1):
            tf.config.threading.set_inter_op_parallelism_threads(threads)
            ds = tf.data.Dataset.from_tensor_slices(tf.stack([a, 2 * a])).map(
                tf.function(f), num_parallel_calls=2)
            results[threads] = (tf.function(f)(a).numpy(), [e.numpy() for e in ds])
            if threads == 2:
                assert launched, "nothing was handed to the worker"
    finally:
        tf.config.threading.set_inter_op_parallelism_threads(before)
    np.testing.assert_array_equal(results[2][0], results[1][0])
    for x, y in zip(results[2][1], results[1][1]):
        np.testing.assert_array_equal(x, y)
