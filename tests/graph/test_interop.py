"""Inter-op parallelism: nodes run on the worker thread give the same training results as
running every node in order, and their errors still name the node and user line."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply, op
from tapeflow.graph import interop, schedule


@pytest.fixture
def restore_threads():
    before = tf.config.threading.get_inter_op_parallelism_threads()
    yield
    tf.config.threading.set_inter_op_parallelism_threads(before)


def _train(threads: int, steps: int = 3) -> tuple[list[np.ndarray], str]:
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.random.set_seed(1)
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(6, 3, padding="same", input_shape=(8, 8, 2)),
        tf.keras.layers.BatchNormalization(), tf.keras.layers.ReLU(),
        tf.keras.layers.Conv2D(4, 3), tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(3)])
    opt = tf.keras.optimizers.Adam(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((5, 8, 8, 2)).astype(np.float32))
    y = tf.constant(rng.integers(0, 3, 5))

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(steps):
        step(x, y)
    return [w.numpy() for w in model.weights], step.get_concrete_function(x, y).code


def test_concurrent_nodes_train_exactly_like_in_order(restore_threads, monkeypatch):
    monkeypatch.setattr(schedule, "HANDOFF", 0.0)  # tiny kernels: make handing over pay
    monkeypatch.setattr(schedule, "MIN_WORKER_S", 0.0)
    concurrent, code = _train(2)
    in_order, code_1 = _train(1)
    assert ".get()" in code
    assert ".get()" not in code_1
    for a, b in zip(concurrent, in_order):
        np.testing.assert_array_equal(a, b)


@op("FailsOnNegativeForTest", worker=True)
def _fails_on_negative(x):
    if (x < 0).any():
        raise ValueError("negative input")
    return x * 2


def _on_worker(*ops: str):
    """A stand-in for ``schedule.two_threads``: the graph's order, `ops` on the worker."""
    def two_threads(plan, producers, on_worker_ok, cost=None):
        return [(node, node.op.name in ops) for node in plan]

    return two_threads


def test_errors_on_the_worker_name_the_node_and_user_line(restore_threads, monkeypatch):
    monkeypatch.setattr(schedule, "two_threads", _on_worker("FailsOnNegativeForTest", "AddV2"))
    tf.config.threading.set_inter_op_parallelism_threads(2)

    @tf.function
    def f(x):
        y = apply(_fails_on_negative, x)  # the user's line
        z = tf.matmul(tf.reshape(x, [1, 2]), tf.ones([2, 2]))  # the caller's work meanwhile
        return y + tf.reduce_sum(z)

    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [8.0, 10.0])
    assert ".get()" in f.get_concrete_function(tf.constant([1.0, 2.0])).code
    # the failing node's reader (AddV2) also runs on the worker: the error still names the
    # node that raised, not the one that was waited for
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        f(tf.constant([-1.0, 2.0]))
    assert "FailsOnNegativeForTest" in str(info.value) and "negative input" in str(info.value)
    assert "test_interop.py" in str(info.value)


def test_a_chain_stays_on_the_calling_thread(restore_threads):
    tf.config.threading.set_inter_op_parallelism_threads(2)
    f = tf.function(lambda x: tf.matmul(apply(_fails_on_negative, x), x) + 1.0)
    assert ".get()" not in f.get_concrete_function(tf.ones([300, 300])).code


def test_thread_setting_is_checked(restore_threads):
    with pytest.raises(ValueError, match="num_threads must be an int >= 0"):
        tf.config.threading.set_inter_op_parallelism_threads(-1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    assert tf.config.threading.get_inter_op_parallelism_threads() == 1
    assert not interop.enabled()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_worker():
    import os

    assert interop.submit(sum, [1, 2]).result() == 3  # the parent's worker exists now
    pid = os.fork()
    if pid == 0:  # child: a stale pool would never run the task; exit code says what happened
        try:
            os._exit(0 if interop.submit(sum, [3, 4]).result(timeout=10) == 7 else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_pending_kernel_runs_past_variable_writes_and_reads_the_old_value(restore_threads,
                                                                           monkeypatch):
    monkeypatch.setattr(schedule, "two_threads", _on_worker("FailsOnNegativeForTest"))
    tf.config.threading.set_inter_op_parallelism_threads(2)
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def f():
        y = apply(_fails_on_negative, v.read_value())  # submitted, reading v's buffer
        v.assign([-7.0, -9.0])  # stateful: must neither wait for y nor change what it reads
        z = tf.matmul(tf.reshape(v, [1, 2]), tf.ones([2, 2]))  # the caller's work meanwhile
        return y + tf.reduce_sum(z)

    np.testing.assert_array_equal(f().numpy(), [2.0 - 32.0, 4.0 - 32.0])
    code = f.get_concrete_function().code.splitlines()
    result_line = next(i for i, line in enumerate(code) if ".get()" in line)
    reshape_line = next(i for i, line in enumerate(code) if ".reshape(" in line)  # after assign
    assert reshape_line < result_line, "\n".join(code)


def test_a_graph_run_on_the_worker_hands_its_own_nodes_over_at_once():
    inner = interop.submit(lambda: interop.submit(sum, [5, 6]).done())
    assert inner.result(timeout=10) is True  # ran inline: the worker cannot wait for itself


def _slow_split(where: dict):
    """A split of 8 slices of 10 ms each, recording the thread that ran each slice."""
    import threading
    import time

    from tapeflow.kernels import parallel

    def work(lo, hi):
        where[lo] = threading.current_thread().name
        time.sleep(0.01)
        return lo

    return parallel.split(8, 0, work, slices=8)


def _no_idle_core(monkeypatch):
    from tapeflow.framework import threads
    from tapeflow.kernels import parallel

    monkeypatch.setattr(threads, "_intra_op", 2)
    monkeypatch.setattr(parallel, "idle_core", lambda: False)


def test_the_worker_joins_the_callers_kernel_when_it_runs_out_of_nodes(monkeypatch):
    """The caller's kernel began beside a worker node (so on one core); once that node ends
    and nothing else is queued, the worker takes the kernel's slices not yet started."""
    import time

    _no_idle_core(monkeypatch)
    busy = interop.submit(time.sleep, 0.025)
    where: dict = {}
    assert _slow_split(where) == list(range(8))
    busy.result()
    assert where[0] == "MainThread" and "tapeflow-interop" in where.values()


def test_the_caller_joins_the_workers_kernel_while_it_waits_for_it(monkeypatch):
    import time

    from tapeflow.kernels import parallel

    _no_idle_core(monkeypatch)
    where: dict = {}
    pending = interop.Pending(interop.submit(_slow_split, where))
    while not parallel._open:  # the worker's kernel has begun, alone
        time.sleep(0.0005)
    assert pending.get() == list(range(8))
    assert where[0] == "tapeflow-interop" and "MainThread" in where.values()
