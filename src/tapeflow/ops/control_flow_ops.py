"""``tf.print``, ``tf.group``, ``tf.no_op`` and ``tf.control_dependencies``: ops that order and
show values, eager or traced (``cond``, ``while_loop`` and ``TensorArray`` live with the graph:
``graph/control_flow.py``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import nest
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable

# Types tf.print shows by their stacked value (TensorArray, installed by graph/control_flow.py)
printed_as_stack: tuple = ()


# --- print, group -------------------------------------------------------------------------------


def _format(value: np.ndarray, summarize: int) -> str:
    if value.dtype == object:
        value = np.vectorize(lambda s: s.decode() if isinstance(s, bytes) else str(s))(value) \
            if value.size else value
    if value.ndim == 0:
        v = value[()]
        return v if isinstance(v, str) else str(v)
    edge = summarize if summarize and summarize > 0 else 3
    return np.array2string(value, threshold=0 if summarize != -1 else sys.maxsize,
                           edgeitems=edge, separator=" ")


@op("PrintV2", multi_output=True, stateful=True, shape=lambda *specs, **attrs: [])
def _print(*values, template, sep, end, stream, summarize):
    it = iter(values)
    parts = [fmt.format(*[_format(next(it), summarize) for _ in range(n)])
             for fmt, n in template]
    out = sys.stderr if stream is None else (sys.stdout if stream == "stdout" else stream)
    print(*parts, sep=sep, end=end, file=out)
    return ()


def _print_template(x: Any, tensors: list) -> str:
    """A format string for `x` with one ``{}`` per tensor (collected into `tensors`)."""
    if isinstance(x, (Tensor, Variable)):
        tensors.append(x)
        return "{}"
    if isinstance(x, printed_as_stack):
        tensors.append(x.stack())
        return "{}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_print_template(e, tensors) for e in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
    if isinstance(x, dict):
        items = ", ".join(f"{_escape(repr(k))}: {_print_template(v, tensors)}"
                          for k, v in x.items())
        return "{{" + items + "}}"
    return _escape(str(x))


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


@export("print")
def print_(*inputs: Any, output_stream: Any = None, summarize: int = 3, sep: str = " ",
           end: str = "\n", name: str | None = None):
    """``tf.print``: print tensors when the op runs (every call of a traced function)."""
    tensors: list = []
    template = []
    for x in inputs:
        before = len(tensors)
        template.append((_print_template(x, tensors), len(tensors) - before))
    stream = output_stream
    if stream is sys.stdout:
        stream = "stdout"
    elif stream is sys.stderr:
        stream = None
    apply(_print, *tensors, template=tuple(template), sep=sep, end=end, stream=stream,
          summarize=summarize)
    graph = _state.graph
    return graph.nodes[-1] if graph is not None else None


@op("NoOp", multi_output=True, stateful=True, shape=lambda *specs: [])
def _no_op(*inputs):
    return ()


@export("group")
def group(*inputs: Any, name: str | None = None):
    """``tf.group``: one op that runs all `inputs` (graph mode); None eagerly."""
    if _state.graph is None:
        return None
    tensors = []
    for x in nest.flatten(list(inputs)):
        if not isinstance(x, (Tensor, Variable)) and hasattr(x, "control_inputs"):  # a node
            tensors.extend(x.outputs)
            if not x.outputs:
                tensors.extend(x.inputs)
        elif x is not None:
            tensors.append(x)
    apply(_no_op, *tensors)
    return _state.graph.nodes[-1]


@export("no_op")
def no_op(name: str | None = None):
    return group(name=name)


@export("control_dependencies")
def control_dependencies(control_inputs: Any):
    """Ops created inside run after `control_inputs` (graphs); a no-op when eager."""
    import contextlib

    graph = _state.graph
    if graph is None:
        return contextlib.nullcontext()
    return graph.control_dependencies(control_inputs)
