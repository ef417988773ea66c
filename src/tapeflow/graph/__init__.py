"""Graph mode: IR, tracing (`function`), gradients, optimizer passes, codegen, AutoGraph.

Importing this package registers ``tf.function``, ``tf.autograph``, ``tf.init_scope`` and
``tf.Graph`` and ``tf.gradients``.
"""

import contextlib

from tapeflow._api import export
from tapeflow.framework.context import eager_scope
from tapeflow.framework.context import state as _state
from tapeflow.graph import autograph, control_flow, function, symbolic_gradients  # noqa: F401
from tapeflow.graph.function import ConcreteFunction, Function
from tapeflow.graph.ir import Graph

export("Graph")(Graph)


@export("init_scope")
@contextlib.contextmanager
def init_scope():
    """Lift ops out of a function being traced (run them eagerly, tapes paused).

    Inside a compat.v1 graph there is nothing to lift out of: ops stay in that graph.
    """
    graph = _state.graph
    if graph is not None and not graph._root().building_function:
        yield
        return
    with eager_scope():
        yield
