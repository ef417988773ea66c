"""``model.summary()``: Keras's layer table with its parameter counts.

Columns are filled left to right; text too long for a column continues on the next line
(breaking after ``),`` and similar separators, as Keras does), and every layer row is followed
by a blank line of the table's width.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_BREAKS = ("),", "},", "],", "',")


def _count(variables: list) -> int:
    seen: set[int] = set()
    total = 0
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            total += int(np.prod(v.shape.as_list()))
    return total


def _format_shape(shape: Any) -> str:
    if isinstance(shape, list):
        return "[" + ", ".join(_format_shape(s) for s in shape) + "]"
    return str(tuple(shape)) if shape is not None else "?"


def format_row(fields: list[str], positions: list[int], nested_level: int = 0) -> list[str]:
    """The printed lines of one table row (wrapping each column within its width); a row of a
    nested model's layer is framed by one ``|`` per level on each side, as Keras draws it."""
    left = [str(f) for f in fields]
    lines = []
    while any(left):
        line = ""
        for col, text in enumerate(left):
            start = positions[col - 1] if col else 0
            last = col == len(positions) - 1
            width = positions[col] - start - (0 if last else 2) - (nested_level if col == 0
                                                                   else 0)
            piece = text[:width]
            cuts = [piece.find(b) + len(b) for b in _BREAKS if piece.find(b) >= 0]
            if cuts:
                piece = piece[:min(cuts)]
            left[col] = text[len(piece):]
            if col == 0:
                line += "|" * nested_level + " "
            line += piece
            pad_to = positions[col] - (nested_level if last else 0)
            line += " " * (pad_to - len(line))
        lines.append(line + "|" * nested_level)
    return lines


def _layer_output_shape(layer: Any) -> str:
    try:
        shape = layer.output_shape
    except (AttributeError, RuntimeError):
        return "multiple"
    return _format_shape(shape)


def _connections(layer: Any, model_nodes: set[int]) -> str:
    parts = []
    for node in layer._inbound_nodes:
        if id(node) not in model_nodes:
            continue
        for kt in node.keras_inputs:
            inbound, node_index, tensor_index = kt._keras_history
            parts.append(f"{inbound.name}[{node_index}][{tensor_index}]")
    return str(parts) if parts else ""


def _is_sequential_like(model: Any) -> bool:
    nodes = getattr(model, "_nodes", None)
    if nodes is None:
        return True
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        return False
    for node in nodes:
        if len(node.keras_inputs) > 1 or len(node.layer._inbound_nodes) > 1:
            return False
    return True


def _layer_range(model: Any, layer_range: Any) -> tuple[int, int]:
    """Keras's ``layer_range=[first_name, last_name]``: the slice of ``model.layers`` printed."""
    if layer_range is None:
        return 0, len(model.layers)
    if len(layer_range) != 2:
        raise ValueError("layer_range must be a list or tuple of length 2. Received: "
                         f"layer_range = {layer_range} of length {len(layer_range)}")
    names = [layer.name for layer in model.layers]
    bounds = []
    for pattern in layer_range:
        matches = [i for i, name in enumerate(names) if pattern in name]
        if not matches:
            raise ValueError(f"Passed layer_name {pattern!r} does not match any layer name "
                             f"among {names}")
        bounds.append(matches)
    return bounds[0][0], bounds[1][-1] + 1


def print_summary(model: Any, line_length: int | None = None, positions: Any = None,
                  print_fn: Callable[[str], Any] | None = None, expand_nested: bool = False,
                  show_trainable: bool = False, layer_range: Any = None) -> None:
    """Print `model`'s layers, output shapes and parameter counts in Keras's format
    (``expand_nested`` frames each nested model's layers below it, ``show_trainable`` adds a
    Y/N column, ``layer_range`` limits the rows to the layers between two names)."""
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by calling "
                         "`build()` or by calling the model on a batch of data.")
    print_fn = print_fn or print
    sequential_like = _is_sequential_like(model)
    if sequential_like:
        line_length = line_length or 65
        positions = positions or [0.45, 0.85, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = positions or [0.33, 0.55, 0.67, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    positions = list(positions)
    if show_trainable:
        line_length += 11
        positions.append(line_length)
        header.append("Trainable")
    model_nodes = {id(n) for n in getattr(model, "_nodes", [])}
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    for line in format_row(header, positions):
        print_fn(line)
    print_fn("=" * line_length)

    def print_layer(layer: Any, level: int, is_last_nested: bool) -> None:
        params = layer.count_params() if layer.built else 0
        fields = [f"{layer.name} ({type(layer).__name__})",
                  _layer_output_shape(layer), str(params)]
        if not sequential_like:
            fields.append(_connections(layer, model_nodes))
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        for line in format_row(fields, positions, level):
            print_fn(line)
        inner = getattr(layer, "layers", None) if expand_nested else None
        if inner:
            print_fn("|" * (level + 1) + "\u00af" * (line_length - 2 * level - 2)
                     + "|" * (level + 1))
            for i, sub in enumerate(inner):
                print_layer(sub, level + 1, i == len(inner) - 1)
            print_fn("|" * level + "\u00af" * (line_length - 2 * level) + "|" * level)
            is_last_nested = True  # Keras prints no spacer below a closed frame
        if not is_last_nested:
            print_fn("|" * level + " " * (line_length - 2 * level) + "|" * level)

    first, last = _layer_range(model, layer_range)
    for layer in model.layers[first:last]:
        print_layer(layer, 0, False)
    print_fn("=" * line_length)
    trainable = _count(model.trainable_weights)
    non_trainable = _count(model.non_trainable_weights)
    print_fn(f"Total params: {trainable + non_trainable:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {non_trainable:,}")
    print_fn("_" * line_length)
