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


def format_row(fields: list[str], positions: list[int]) -> list[str]:
    """The printed lines of one table row (wrapping each column within its width)."""
    left = [str(f) for f in fields]
    lines = []
    while any(left):
        line = ""
        for col, text in enumerate(left):
            start = positions[col - 1] if col else 0
            last = col == len(positions) - 1
            width = positions[col] - start - (0 if last else 2)
            piece = text[:width]
            cuts = [piece.find(b) + len(b) for b in _BREAKS if piece.find(b) >= 0]
            if cuts:
                piece = piece[:min(cuts)]
            left[col] = text[len(piece):]
            if col == 0:
                line += " "
            line += piece
            line += " " * (positions[col] - len(line))
        lines.append(line)
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


def print_summary(model: Any, line_length: int | None = None, positions: Any = None,
                  print_fn: Callable[[str], Any] | None = None) -> None:
    """Print `model`'s layers, output shapes and parameter counts in Keras's format."""
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
    model_nodes = {id(n) for n in getattr(model, "_nodes", [])}
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    for line in format_row(header, positions):
        print_fn(line)
    print_fn("=" * line_length)
    layers = model.layers
    for layer in layers:
        params = layer.count_params() if layer.built else 0
        fields = [f"{layer.name} ({type(layer).__name__})",
                  _layer_output_shape(layer), str(params)]
        if not sequential_like:
            fields.append(_connections(layer, model_nodes))
        for line in format_row(fields, positions):
            print_fn(line)
        print_fn(" " * line_length)
    print_fn("=" * line_length)
    trainable = _count(model.trainable_weights)
    non_trainable = _count(model.non_trainable_weights)
    print_fn(f"Total params: {trainable + non_trainable:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {non_trainable:,}")
    print_fn("_" * line_length)
