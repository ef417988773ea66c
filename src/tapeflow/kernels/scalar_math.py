"""Per-element forms of elementwise ops that are not a single NumPy ufunc, for compiled loops.

An op names one of these, with its constant operands, as its ``scalar`` fact
(``Op(scalar=(fn, constants))``); a ``jit_compile`` cluster calls it inside its one loop
(``kernels/jit_cluster.py``), the constants typed as the cluster's dtype, so a float32 cluster
stays float32. Each computes what the op's NumPy kernel computes for one element, by the same
formula.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit


@jit(inline="always")
def sigmoid(x, half):
    """0.5 * tanh(0.5 x) + 0.5: the Sigmoid kernel's overflow-free form."""
    return np.tanh(x * half) * half + half


@jit(inline="always")
def relu_grad(g, y, zero):
    """g where the ReLU's output y is positive, else 0."""
    return g if y > zero else zero


@jit(inline="always")
def reciprocal(x, one):
    return one / x


@jit(inline="always")
def rsqrt(x, one):
    return one / np.sqrt(x)
