"""bench_graph.py's W1-W3 as ``jax.jit`` functions, served to bench_graph in a worker process.

    <python with jax> benchmarks/jax_workloads.py ARRAYS.npz

Run by ``bench_graph.py --jax-python PATH`` (JAX lives in its own environment; this file needs
only NumPy and JAX). The weights and inputs come from bench_graph (the .npz), so both
frameworks compute the same numbers. Protocol, one JSON line per request on stdout: first
``{"ready": version}``; then for each stdin line ``NAME NUMBER CLOCK`` the per-call microseconds
of `NUMBER` calls of workload NAME (W1, W2 or W3), each call waiting for its result, by CLOCK:
``wall``, or ``process`` (CPU time of all the process's threads: XLA computes on its own).
"""

from __future__ import annotations

import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np


def workloads(arrays: dict) -> dict:
    w1, b1, w2, b2 = (jnp.asarray(arrays[k]) for k in ("w1", "b1", "w2", "b2"))
    x, labels = jnp.asarray(arrays["x"]), jnp.asarray(arrays["labels"])

    @jax.jit
    def mlp(params, x):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x.reshape(-1, 784) @ w1 + b1)
        return h @ w2 + b2

    kernel, recurrent, bias = (jnp.asarray(arrays[k]) for k in ("kernel", "recurrent", "bias"))
    zeros = jnp.zeros((10, 10), jnp.float32)

    @jax.jit
    def cell(x, h, c):
        z = x @ kernel + h @ recurrent + bias
        i, f, g, o = jnp.split(z, 4, axis=1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return h, c

    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-7

    def loss_fn(params, key):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x.reshape(-1, 784) @ w1 + b1)
        h = jnp.where(jax.random.bernoulli(key, 0.8, h.shape), h / 0.8, 0.0)
        logits = h @ w2 + b2
        picked = jnp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - picked)

    @jax.jit
    def train_step(params, ms, vs, t, key):
        key, sub = jax.random.split(key)
        loss, grads = jax.value_and_grad(loss_fn)(params, sub)
        t = t + 1.0
        scale = lr * jnp.sqrt(1.0 - beta2 ** t) / (1.0 - beta1 ** t)
        ms = [beta1 * m + (1.0 - beta1) * g for m, g in zip(ms, grads)]
        vs = [beta2 * v + (1.0 - beta2) * g * g for v, g in zip(vs, grads)]
        params = [p - scale * m / (jnp.sqrt(v) + eps) for p, m, v in zip(params, ms, vs)]
        return params, ms, vs, t, key, loss

    params = [w1, b1, w2, b2]
    state = [params, [jnp.zeros_like(p) for p in params], [jnp.zeros_like(p) for p in params],
             jnp.float32(0.0), jax.random.PRNGKey(0)]

    def w3():
        *new, loss = train_step(*state)
        loss.block_until_ready()
        state[:] = new

    return {"W1": lambda: mlp(params, x).block_until_ready(),
            "W2": lambda: jax.block_until_ready(cell(zeros, zeros, zeros)),
            "W3": w3}


def main() -> None:
    fns = workloads(dict(np.load(sys.argv[1])))
    for fn in fns.values():  # trace and compile before the first timed round
        for _ in range(3):
            fn()
    print(json.dumps({"ready": jax.__version__}), flush=True)
    clocks = {"wall": time.perf_counter, "process": time.process_time}
    for line in sys.stdin:
        name, number, clock = line.split()
        fn, number, clock = fns[name], int(number), clocks[clock]
        start = clock()
        for _ in range(number):
            fn()
        print(json.dumps({"us": (clock() - start) / number * 1e6}), flush=True)


if __name__ == "__main__":
    main()
