"""Graph mode (tf.function) vs tapeflow eager vs PyTorch eager vs hand-written NumPy.

    python benchmarks/bench_graph.py [--repeats 7] [--number 300] [--jax-python PATH]
                                     [--clock wall|process]

W1: seed MLP inference, x uniform [60,28,28] -> flatten -> dense 784->128 relu -> dense 10.
W2: seed LSTMCell(10) step, input and states zeros [10,10].
W3: training step of the W1 model: dropout 0.2, sparse softmax cross-entropy, Adam(1e-3).
Written with raw ops (same shapes and math in every framework). Each time is the median of
`repeats` runs of at least `number` calls (and 0.2 s) after a warm-up; ratios are tapeflow
graph over the peer. NumPy's BLAS and PyTorch both run single-threaded.
With ``--jax-python`` (an interpreter with JAX installed, e.g. a separate venv: JAX is not a
tapeflow dependency) the same three workloads also run as ``jax.jit`` functions in a worker
process of that interpreter (W3 with a hand-written Adam, dropout keys split per step), their
timing rounds alternating with tapeflow's graph rounds, so both see the same machine; JAX runs
on one thread like the others (unless XLA_FLAGS is set). Below each row, the spreads
(min/median/p90 of the repeats, us).
W4: the DenseNet training step (batch 64, Adam) as a tf.function, in a fresh process with every
core, beside its hardware limit: the step's FLOPs (the ops' ``flops`` facts summed over the
traced graph, ``ConcreteFunction.flops()``) over the machine's float32 GEMM rate.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import timeit

if "--w4-worker" not in sys.argv:  # W4's own process keeps every core (see report_w4)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # same single thread as torch below

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402
import tapeflow.graph  # noqa: E402,F401  (registers tf.function)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread_text  # noqa: E402

RNG = np.random.default_rng(0)


def calls_for(fn, number: int, min_seconds: float = 0.2) -> int:
    """Calls per timing round: at least `number` and `min_seconds` (after a warm-up)."""
    fn()
    warm = timeit.timeit(fn, number=max(1, number // 5)) / max(1, number // 5)
    return max(number, int(min_seconds / max(warm, 1e-9)))


def rounds_us(fn, number: int, repeats: int) -> list[float]:
    """Per-call time (us) of each of `repeats` rounds of at least `number` calls and 0.2 s."""
    number = calls_for(fn, number)
    return [t / number * 1e6 for t in timeit.repeat(fn, number=number, repeat=repeats)]


def first_call_ms(make) -> float:
    fn, args = make()
    start = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - start) * 1e3


def _glorot(n_in: int, n_out: int) -> np.ndarray:
    limit = np.sqrt(6.0 / (n_in + n_out))
    return RNG.uniform(-limit, limit, (n_in, n_out)).astype(np.float32)


MLP_WEIGHTS = [_glorot(784, 128), np.zeros(128, np.float32), _glorot(128, 10),
               np.zeros(10, np.float32)]
MLP_NAMES = ["w1", "b1", "w2", "b2"]
X_NP = RNG.uniform(size=(60, 28, 28)).astype(np.float32)
LABELS_NP = RNG.integers(0, 10, 60).astype(np.int32)


# --- W1 ---------------------------------------------------------------------------------------


def w1_tapeflow():
    w1, b1, w2, b2 = (tf.Variable(w, name=n) for w, n in zip(MLP_WEIGHTS, MLP_NAMES))

    def mlp(x):
        h = tf.nn.relu(tf.matmul(tf.reshape(x, [-1, 784]), w1) + b1)
        return tf.matmul(h, w2) + b2

    return mlp, (tf.constant(X_NP),)


def w1_numpy():
    w1, b1, w2, b2 = MLP_WEIGHTS
    x = X_NP

    def mlp():
        h = np.maximum(x.reshape(-1, 784) @ w1 + b1, 0)
        return h @ w2 + b2

    return mlp


def w1_torch(torch):
    w1, b1, w2, b2 = (torch.tensor(w, requires_grad=True) for w in MLP_WEIGHTS)
    x = torch.from_numpy(X_NP)

    def mlp():
        with torch.no_grad():
            h = torch.relu(x.reshape(-1, 784) @ w1 + b1)
            return h @ w2 + b2

    return mlp


# --- W2 ---------------------------------------------------------------------------------------

LSTM_WEIGHTS = [_glorot(10, 40), _glorot(10, 40), np.zeros(40, np.float32)]


def w2_tapeflow():
    kernel, recurrent, bias = (tf.Variable(w, name=n) for w, n in
                               zip(LSTM_WEIGHTS, ["kernel", "recurrent_kernel", "bias"]))

    def cell(x, h, c):
        z = tf.matmul(x, kernel) + tf.matmul(h, recurrent) + bias
        i, f, g, o = tf.split(z, 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, [h, c]

    zeros = tf.zeros([10, 10])
    return cell, (zeros, zeros, zeros)


def _np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def w2_numpy():
    kernel, recurrent, bias = LSTM_WEIGHTS
    x = h = c = np.zeros((10, 10), np.float32)

    def cell():
        z = x @ kernel + h @ recurrent + bias
        i, f, g, o = np.split(z, 4, axis=1)
        c2 = _np_sigmoid(f) * c + _np_sigmoid(i) * np.tanh(g)
        h2 = _np_sigmoid(o) * np.tanh(c2)
        return h2, [h2, c2]

    return cell


def w2_torch(torch):
    kernel, recurrent, bias = (torch.tensor(w, requires_grad=True) for w in LSTM_WEIGHTS)
    x = h = c = torch.zeros(10, 10)

    def cell():
        z = x @ kernel + h @ recurrent + bias
        i, f, g, o = torch.split(z, 10, dim=1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h2 = torch.sigmoid(o) * torch.tanh(c2)
        return h2, [h2, c2]

    return cell


# --- W3 ---------------------------------------------------------------------------------------


def w3_tapeflow():
    params = [tf.Variable(w, name=n) for w, n in zip(MLP_WEIGHTS, MLP_NAMES)]
    ms = [tf.Variable(np.zeros_like(w)) for w in MLP_WEIGHTS]
    vs = [tf.Variable(np.zeros_like(w)) for w in MLP_WEIGHTS]
    step = tf.Variable(0.0)
    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-7

    def train_step(x, labels):
        w1, b1, w2, b2 = params
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(tf.reshape(x, [-1, 784]), w1) + b1)
            h = tf.nn.dropout(h, 0.2)
            logits = tf.matmul(h, w2) + b2
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
        grads = tape.gradient(loss, params)
        t = step.assign_add(1.0)
        scale = lr * tf.sqrt(1.0 - tf.pow(beta2, t)) / (1.0 - tf.pow(beta1, t))
        for p, m, v, g in zip(params, ms, vs, grads):
            m.assign(beta1 * m + (1.0 - beta1) * g)
            v.assign(beta2 * v + (1.0 - beta2) * tf.square(g))
            p.assign_sub(scale * m / (tf.sqrt(v) + eps))
        return loss

    return train_step, (tf.constant(X_NP), tf.constant(LABELS_NP))


def w3_numpy():
    params = [w.copy() for w in MLP_WEIGHTS]
    ms = [np.zeros_like(w) for w in params]
    vs = [np.zeros_like(w) for w in params]
    state = {"t": 0}
    x = X_NP.reshape(-1, 784)
    rows = np.arange(60)
    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-7

    def train_step():
        w1, b1, w2, b2 = params
        pre = x @ w1 + b1
        h = np.maximum(pre, 0)
        mask = (RNG.random(h.shape, dtype=np.float32) >= 0.2) / np.float32(0.8)
        hd = h * mask
        logits = hd @ w2 + b2
        s = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.log(p[rows, LABELS_NP]).mean()
        dlogits = p
        dlogits[rows, LABELS_NP] -= 1
        dlogits /= 60
        gw2, gb2 = hd.T @ dlogits, dlogits.sum(0)
        dh = (dlogits @ w2.T) * mask * (pre > 0)
        gw1, gb1 = x.T @ dh, dh.sum(0)
        state["t"] += 1
        t = state["t"]
        scale = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        for prm, m, v, g in zip(params, ms, vs, (gw1, gb1, gw2, gb2)):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            prm -= scale * m / (np.sqrt(v) + eps)
        return loss

    return train_step


def w3_torch(torch):
    params = [torch.tensor(w, requires_grad=True) for w in MLP_WEIGHTS]
    opt = torch.optim.Adam(params, lr=1e-3, eps=1e-7)
    x = torch.from_numpy(X_NP)
    labels = torch.from_numpy(LABELS_NP.astype(np.int64))

    def train_step():
        w1, b1, w2, b2 = params
        h = torch.relu(x.reshape(-1, 784) @ w1 + b1)
        h = torch.nn.functional.dropout(h, 0.2, training=True)
        loss = torch.nn.functional.cross_entropy(h @ w2 + b2, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return train_step


# --- W4: DenseNet step against the hardware limit -----------------------------------------------


def w4_worker(steps: int) -> dict:
    """Run in a fresh process with every core for BLAS: the DenseNet training step (batch 64,
    Adam) as a tf.function: first call (trace, optimize, compile, run), median step, and the
    step's FLOPs counted from the ops' ``flops`` facts over the traced graph."""
    from tapeflow.models import DenseNet

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

    start = time.perf_counter()
    step(x, y)
    first = time.perf_counter() - start
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step(x, y)
        times.append(time.perf_counter() - start)
    from threadpoolctl import threadpool_limits

    a = rng.random((1024, 1024), dtype=np.float32)
    with threadpool_limits(limits=os.cpu_count(), user_api="blas"):  # tapeflow pinned BLAS to 1
        a @ a
        gemm = min(timeit.repeat(lambda: a @ a, number=5, repeat=7)) / 5  # best: machine's rate
    return {"first_s": first, "step_s": statistics.median(times),
            "flops": step.get_concrete_function(x, y).flops(), "gflops": 2 * 1024 ** 3 / gemm / 1e9}


def report_w4(steps: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, __file__, "--w4-worker", str(steps)], env=env,
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    limit = r["flops"] / (r["gflops"] * 1e9)
    print(f"W4 DenseNet train step (tf.function, batch 64): {r['step_s'] * 1e3:.1f} ms, first "
          f"call {r['first_s']:.2f} s\n  hardware limit: {r['flops'] / 1e9:.1f} GFLOP / "
          f"{r['gflops']:.0f} GFLOP/s (float32 1024^3 matmul, all cores) = {limit * 1e3:.1f} ms;"
          f" step / limit = {r['step_s'] / limit:.2f}x (goal <= 1.6x)")


# --- driver -----------------------------------------------------------------------------------


# one thread, as NumPy's BLAS and PyTorch here (set XLA_FLAGS to measure JAX otherwise)
SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


class JaxWorker:
    """benchmarks/jax_workloads.py in a process of `python` (an interpreter with JAX), fed this
    file's weights and inputs through an .npz."""

    def __init__(self, python: str):
        import tempfile

        self._dir = tempfile.TemporaryDirectory()
        arrays = os.path.join(self._dir.name, "arrays.npz")
        np.savez(arrays, **dict(zip(MLP_NAMES, MLP_WEIGHTS)), x=X_NP, labels=LABELS_NP,
                 **dict(zip(["kernel", "recurrent", "bias"], LSTM_WEIGHTS)))
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_workloads.py")
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "OPENBLAS_NUM_THREADS")}
        env.setdefault("XLA_FLAGS", SINGLE_THREAD_XLA)
        self.proc = subprocess.Popen([python, script, arrays], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        self.version = self._read()["ready"]

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the JAX worker exited (see its error above)")
        return json.loads(line)

    def per_call_us(self, name: str, number: int, clock: str) -> float:
        self.proc.stdin.write(f"{name} {number} {clock}\n")
        self.proc.stdin.flush()
        return self._read()["us"]

    def timed(self, name: str, clock: str):
        """A timing round for ``alternating``: run(calls) -> seconds of `name`."""
        def run(number: int) -> float:
            return self.per_call_us(name, number, clock) * number / 1e6
        return run

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self._dir.cleanup()


CLOCKS = {"wall": time.perf_counter, "process": time.process_time}


def alternating(fns: dict, number: int, repeats: int, clock: str = "wall"
                ) -> dict[str, list[float]]:
    """Per-call us of each round of each function, the rounds interleaved (graph, jit, eager,
    NumPy, PyTorch, JAX, graph, ...) so every framework sees the same machine. A value of
    `fns` is a zero-argument callable, or ("rounds", run) where run(n) times n calls itself.
    `clock` "process" counts the CPU time of every thread of the process (the inter-op
    worker's too), which a shared machine's load barely moves."""
    plans = {}
    for name, fn in fns.items():
        if isinstance(fn, tuple):
            run = fn[1]
            run(max(1, number // 5))  # warm-up
            warm = run(max(1, number // 5)) / max(1, number // 5)
            plans[name] = (run, max(number, int(0.2 / max(warm, 1e-9))))
        else:
            timer = timeit.Timer(fn, timer=CLOCKS[clock])
            plans[name] = (timer.timeit, calls_for(fn, number))
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, (run, n) in plans.items():
            times[name].append(run(n) / n * 1e6)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=300)
    parser.add_argument("--w4-steps", type=int, default=10, help="0 skips the DenseNet row")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="process: CPU time of all of each process's threads")
    parser.add_argument("--jax-python", default=None,
                        help="an interpreter with JAX installed: adds jax.jit columns")
    parser.add_argument("--w4-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.w4_worker is not None:
        print(json.dumps(w4_worker(args.w4_worker)))
        return
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    jax = JaxWorker(args.jax_python) if args.jax_python else None
    if jax is not None:
        flags = os.environ.get("XLA_FLAGS", SINGLE_THREAD_XLA)
        print(f"JAX {jax.version} (jax.jit; XLA_FLAGS={flags!r}) in {args.jax_python}")
    workloads = [("W1", "W1 MLP inference", w1_tapeflow, w1_numpy, w1_torch),
                 ("W2", "W2 LSTMCell step", w2_tapeflow, w2_numpy, w2_torch),
                 ("W3", "W3 MLP train step", w3_tapeflow, w3_numpy, w3_torch)]
    header = (f"{'workload':<20}{'graph us':>10}{'jit us':>10}{'eager us':>10}{'numpy us':>10}"
              f"{'torch us':>10}{'jax us':>10}{'jit/graph':>10}{'eager/graph':>12}"
              f"{'graph/numpy':>12}{'graph/torch':>12}{'graph/jax':>10}{'trace ms':>10}")
    print(header)
    for key, name, ours, ref, peer in workloads:
        eager_fn, fargs = ours()
        graph_fn, jit_fn = tf.function(eager_fn), tf.function(eager_fn, jit_compile=True)
        fns = {"graph": lambda g=graph_fn, a=fargs: g(*a), "jit": lambda g=jit_fn, a=fargs: g(*a),
               "eager": lambda f=eager_fn, a=fargs: f(*a), "numpy": ref()}
        if torch is not None:
            fns["torch"] = peer(torch)
        if jax is not None:
            fns["jax"] = ("rounds", jax.timed(key, args.clock))
        times = alternating(fns, args.number, args.repeats, args.clock)
        t = {k: statistics.median(v) for k, v in times.items()}
        t.setdefault("torch", float("nan"))
        t.setdefault("jax", float("nan"))

        def fresh(make=ours):
            f, a = make()
            return tf.function(f), a

        trace = first_call_ms(fresh)
        print(f"{name:<20}{t['graph']:>10.1f}{t['jit']:>10.1f}{t['eager']:>10.1f}"
              f"{t['numpy']:>10.1f}{t['torch']:>10.1f}{t['jax']:>10.1f}"
              f"{t['jit'] / t['graph']:>10.2f}{t['eager'] / t['graph']:>12.2f}"
              f"{t['graph'] / t['numpy']:>12.2f}{t['graph'] / t['torch']:>12.2f}"
              f"{t['graph'] / t['jax']:>10.2f}{trace:>10.1f}")
        print("  min/median/p90 us: " + ", ".join(
            f"{k} {spread_text(v, digits=1)}" for k, v in times.items()))
    if jax is not None:
        jax.close()
    if args.w4_steps:
        report_w4(args.w4_steps)


if __name__ == "__main__":
    main()
