"""Where each layer's variables live in a ``.keras`` / ``.weights.h5`` file.

tf-keras's layout: a layer's own variables (trainable ones first) are datasets ``0``, ``1``, ...
under ``<path>/vars``; its sub-layers follow under their attribute names, visited in reverse
alphabetical order, and layers inside a list are named after their class in snake case
(``dense``, ``dense_1``, ...). A model's layers are the list ``layers``; the optimizer is
``optimizer`` at the top. Every layer is visited once, at the first path that reaches it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tapeflow.framework.variable import Variable


def _snake(name: str) -> str:
    from tapeflow.keras import backend

    return backend.to_snake_case(name)


def own_variables(layer: Any) -> list[Variable]:
    """The variables a layer holds itself, trainable first (Keras's ``save_own_variables``)."""
    direct = layer._direct_variables()
    return [v for v in direct if v.trainable] + [v for v in direct if not v.trainable]


def _children(layer: Any) -> list[tuple[str, Any]]:
    from tapeflow.keras.engine.base_layer import _UNTRACKED, Layer
    from tapeflow.keras.engine.training import Model

    attrs = {k: v for k, v in vars(layer).items() if k not in _UNTRACKED}
    if isinstance(layer, Model):
        attrs["layers"] = layer.layers
        attrs.pop("_layers", None)
    out = []
    for key in sorted(attrs, reverse=True):
        value = attrs[key]
        if isinstance(value, Layer) or (isinstance(value, (list, tuple, dict)) and any(
                isinstance(x, Layer) for x in _flat(value))):
            out.append((key, value))
    return out


def _flat(container: Any) -> list:
    """Layers in a (nested) container, in order."""
    if isinstance(container, dict):
        container = list(container.values())
    out = []
    for x in container:
        out.extend(_flat(x) if isinstance(x, (list, tuple, dict)) else [x])
    return out


def walk(model: Any) -> Iterator[tuple[str, Any]]:
    """(path, layer) for the model and every layer under it, in the file's order."""
    from tapeflow.keras.engine.base_layer import Layer

    seen: set[int] = set()

    def visit(layer: Any, path: str) -> Iterator[tuple[str, Any]]:
        if id(layer) in seen:
            return
        seen.add(id(layer))
        yield path, layer
        for key, value in _children(layer):
            base = f"{path}/{key}" if path else key
            if isinstance(value, Layer):
                yield from visit(value, base)
                continue
            used: dict[str, int] = {}
            for item in _flat(value):
                if not isinstance(item, Layer) or id(item) in seen:
                    continue
                name = _snake(type(item).__name__)
                used[name] = used.get(name, -1) + 1
                yield from visit(item, f"{base}/{name}" + (f"_{used[name]}" if used[name] else ""))

    yield from visit(model, "")
