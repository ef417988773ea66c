"""Inter-op parallelism: weight-gradient kernels run on a second thread while the graph goes on.

A training step's backward pass is two chains: the gradient flowing back through the
activations (each layer waits for the one above it) and, hanging off it, each layer's weight
gradient, which only the optimizer reads at the very end. The activation chain is full of
memory-bound, single-threaded passes (batch norm, ReLU masks, pooling gradients) that leave the
second core idle; the weight gradients (Conv2DBackpropFilter, BiasAddGrad) are compute-bound and
independent of them. Compiled graphs therefore hand those kernels to one worker thread and go
on; the result is waited for where it is first read and before the function returns. Stateful
nodes need not wait: variable writes (assignments, optimizer updates) replace a variable's
buffer instead of writing into it, so a value a kernel is still reading never changes, and
buffer reuse (``codegen._reusable``) only overwrites an array its writer alone reads.

NumPy's products and the compiled loops release the GIL, so the two run in parallel. The conv
kernels see the busy core (``kernels.parallel.idle_core``) and stop splitting their batch in two.

``tf.config.threading.set_inter_op_parallelism_threads(1)`` turns this off (graphs compiled
afterwards run every node in order on the calling thread), as does a single-core machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from tapeflow._api import export

ASYNC_OPS = frozenset({"Conv2DBackpropFilter", "BiasAddGrad"})
# Work the calling thread can do meanwhile: a node goes to the worker only if one of these runs
# between its submission and the first wait for it. Otherwise (the first layer's filter gradient,
# with only optimizer updates after it) the caller would just wait, while the kernel, started
# with the caller busy, runs on one core instead of splitting its batch over two.
OVERLAP_OPS = frozenset({"Conv2D", "_FusedConv2D", "Conv2DBackpropInput", "MatMul",
                         "FusedBatchNorm", "_FusedBatchNormEx", "FusedBatchNormGrad",
                         "_FusedBatchNormGradEx", "MaxPoolGrad", "AvgPoolGrad"})

_requested = 0  # 0: automatic
_pool: ThreadPoolExecutor | None = None


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@export("config.threading.set_inter_op_parallelism_threads")
def set_inter_op_parallelism_threads(num_threads: int) -> None:
    """Threads a graph may run independent nodes on: 1 runs everything in order on the
    caller's thread, 0 chooses automatically (two when the process has two or more cores)."""
    global _requested
    if not isinstance(num_threads, int) or num_threads < 0:
        raise ValueError(f"set_inter_op_parallelism_threads: num_threads must be an int >= 0, "
                         f"got {num_threads!r}")
    _requested = num_threads


@export("config.threading.get_inter_op_parallelism_threads")
def get_inter_op_parallelism_threads() -> int:
    """The value set with ``set_inter_op_parallelism_threads`` (0: automatic)."""
    return _requested


def enabled() -> bool:
    """Whether graphs compiled now hand ``ASYNC_OPS`` nodes to the worker thread."""
    threads = _requested or min(2, _cores())
    return threads > 1


def _forget_pool() -> None:
    """A forked child has no worker thread: it must start its own."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def submit(fn: Callable, *args: Any, **kwargs: Any) -> Future:
    """Run fn(*args, **kwargs) on the inter-op worker thread."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(1, thread_name_prefix="tapeflow-interop")
    return _pool.submit(fn, *args, **kwargs)
