"""What a function given to ``ClusterCoordinator.schedule`` works with: the Keras optimizers and
layers it reaches through its closure and globals.

The coordinator needs them for what TensorFlow keeps on the parameter servers besides the
trainable variables: the optimizer's slots and step count (so that a checkpoint of the
coordinator's optimizer holds the servers' state, and a resumed job sends it back) and the
layers' non-trainable variables (batch-norm moving statistics). Ray pickles the same closure to
send the function to the workers; this walk only looks at it.
"""

from __future__ import annotations

import types
from typing import Any


def optimizers_and_layers(fn: Any, depth: int = 4) -> tuple[list, list]:
    """(optimizers, layers) reachable from `fn`: closure cells, referenced globals, bound
    methods' objects, nested functions, and models' ``optimizer``; each listed once."""
    from tapeflow.keras.engine.base_layer import Layer
    from tapeflow.keras.optimizers.optimizer import Optimizer

    optimizers: dict[int, Any] = {}
    layers: dict[int, Any] = {}
    seen: set[int] = set()

    def visit(obj: Any, level: int) -> None:
        if id(obj) in seen or level > depth:
            return
        seen.add(id(obj))
        if isinstance(obj, Optimizer):
            optimizers.setdefault(id(obj), obj)
        elif isinstance(obj, Layer):
            layers.setdefault(id(obj), obj)
            opt = getattr(obj, "optimizer", None)
            if isinstance(opt, Optimizer):
                optimizers.setdefault(id(opt), opt)
        elif isinstance(obj, types.MethodType):
            visit(obj.__self__, level)
            visit(obj.__func__, level)
        elif isinstance(obj, types.FunctionType):
            for cell in obj.__closure__ or ():
                try:
                    visit(cell.cell_contents, level + 1)
                except ValueError:  # an empty cell
                    pass
            for name in _names(obj.__code__):
                if name in obj.__globals__:
                    visit(obj.__globals__[name], level + 1)
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                visit(item, level + 1)
        elif isinstance(obj, dict):
            for item in obj.values():
                visit(item, level + 1)
        elif hasattr(obj, "python_function"):  # a tf.function
            visit(obj.python_function, level)

    visit(fn, 0)
    return list(optimizers.values()), list(layers.values())


def _names(code: types.CodeType) -> set[str]:
    """Global names `code` and the functions defined inside it refer to."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out
