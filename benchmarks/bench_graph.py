"""Graph mode (tf.function) vs tapeflow eager vs PyTorch eager vs hand-written NumPy.

    python benchmarks/bench_graph.py [--repeats 7] [--number 300]

W1: seed MLP inference, x uniform [60,28,28] -> flatten -> dense 784->128 relu -> dense 10.
W2: seed LSTMCell(10) step, input and states zeros [10,10].
W3: training step of the W1 model: dropout 0.2, sparse softmax cross-entropy, Adam(1e-3).
Written with raw ops (same shapes and math in every framework). Each time is the median of
`repeats` runs of at least `number` calls (and 0.2 s) after a warm-up; ratios are tapeflow
graph over the peer. NumPy's BLAS and PyTorch both run single-threaded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # same single thread as torch below

import numpy as np  # noqa: E402

import tapeflow as tf
import tapeflow.graph  # noqa: F401  (registers tf.function)

RNG = np.random.default_rng(0)


def median_us(fn, number: int, repeats: int, min_seconds: float = 0.2) -> float:
    """Median per-call time; each repeat runs at least `number` calls and `min_seconds`."""
    fn()
    warm = timeit.timeit(fn, number=max(1, number // 5)) / max(1, number // 5)
    number = max(number, int(min_seconds / max(warm, 1e-9)))
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeats)) / number * 1e6


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

    return mlp, tf.function(mlp), (tf.constant(X_NP),)


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
    return cell, tf.function(cell), (zeros, zeros, zeros)


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

    return train_step, tf.function(train_step), (tf.constant(X_NP), tf.constant(LABELS_NP))


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


# --- driver -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=300)
    args = parser.parse_args()
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    workloads = [("W1 MLP inference", w1_tapeflow, w1_numpy, w1_torch),
                 ("W2 LSTMCell step", w2_tapeflow, w2_numpy, w2_torch),
                 ("W3 MLP train step", w3_tapeflow, w3_numpy, w3_torch)]
    header = (f"{'workload':<20}{'graph us':>10}{'eager us':>10}{'numpy us':>10}{'torch us':>10}"
              f"{'eager/graph':>12}{'graph/numpy':>12}{'graph/torch':>12}{'trace ms':>10}")
    print(header)
    for name, ours, ref, peer in workloads:
        eager_fn, graph_fn, fargs = ours()
        t_graph = median_us(lambda g=graph_fn, a=fargs: g(*a), args.number, args.repeats)
        t_eager = median_us(lambda f=eager_fn, a=fargs: f(*a), args.number, args.repeats)
        t_np = median_us(ref(), args.number, args.repeats)
        t_torch = median_us(peer(torch), args.number, args.repeats) if torch else float("nan")

        def fresh(make=ours):
            _, g, a = make()
            return g, a

        trace = first_call_ms(fresh)
        print(f"{name:<20}{t_graph:>10.1f}{t_eager:>10.1f}{t_np:>10.1f}{t_torch:>10.1f}"
              f"{t_eager / t_graph:>12.2f}{t_graph / t_np:>12.2f}{t_graph / t_torch:>12.2f}"
              f"{trace:>10.1f}")


if __name__ == "__main__":
    main()
