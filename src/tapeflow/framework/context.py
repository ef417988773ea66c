"""Per-thread execution state: the graph being built (None when eager), active tapes, name scopes.

Thread-local so that an input pipeline running ops on a worker thread never records onto the
main thread's tape or adds nodes to the graph the main thread is tracing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any


class _State(threading.local):
    graph: Any = None          # the Graph being traced into, or None for eager execution
    tapes: tuple = ()           # active GradientTapes, outermost first
    name_scope: str = ""        # "outer/inner" (no trailing slash)
    seed_offset: Any = None     # set by tf.data around per-element map calls (random op seeds)
    device: Any = None          # the full device string of the innermost tf.device scope
    # derived, kept by __setattr__: eager, with no tape recording and no tf.device scope, so
    # an op only runs its kernel. One read instead of three on every eager op (each read of a
    # thread-local attribute costs ~30 ns, a fifth of `a + b`'s dispatch).
    plain: bool = True

    def __setattr__(self, name: str, value: Any) -> None:
        threading.local.__setattr__(self, name, value)
        if name in _PLAIN_INPUTS:
            threading.local.__setattr__(
                self, "plain", self.graph is None and not self.tapes and self.device is None)


_PLAIN_INPUTS = frozenset(("graph", "tapes", "device", "plain"))


state = _State()

# compat.v1.disable_eager_execution() installs a factory for a process-wide default graph.
_global = {"eager_disabled": False, "default_graph": None}


def name_output(out: Any, name: Any) -> Any:
    """An op's ``name=`` argument names the graph node that made `out` (made unique in the
    current name scope, as TensorFlow names it), when `out` was just added to the graph being
    built; eager tensors and other values pass through."""
    graph, node = state.graph, getattr(out, "node", None)
    if name and graph is not None and getattr(node, "graph", None) is graph:
        graph.rename(node, str(name))
    return out


def executing_eagerly() -> bool:
    """True when ops run immediately (TF's ``tf.executing_eagerly``)."""
    return state.graph is None


@contextlib.contextmanager
def graph_scope(graph: Any) -> Iterator[Any]:
    """Make `graph` the target of dispatched ops on this thread (None: eager)."""
    previous = state.graph
    state.graph = graph
    try:
        yield graph
    finally:
        state.graph = previous


@contextlib.contextmanager
def eager_scope() -> Iterator[None]:
    """Run ops eagerly inside, even while a graph is being traced (``tf.init_scope``)."""
    previous_graph, previous_tapes = state.graph, state.tapes
    state.graph = None
    state.tapes = ()
    try:
        yield
    finally:
        state.graph, state.tapes = previous_graph, previous_tapes


@contextlib.contextmanager
def name_scope(name: str | None) -> Iterator[str]:
    """``tf.name_scope``: prefix for variable and op names created inside."""
    previous = state.name_scope
    if name is None or name == "":
        new = previous
    elif name.endswith("/"):
        new = name[:-1]
    else:
        new = f"{previous}/{name}" if previous else name
    state.name_scope = new
    try:
        yield new + "/" if new else ""
    finally:
        state.name_scope = previous


def scoped_name(name: str) -> str:
    """`name` prefixed with the current name scope."""
    scope = state.name_scope
    return f"{scope}/{name}" if scope else name
