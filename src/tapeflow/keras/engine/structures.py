"""Pairing what the user passes with a model's inputs and outputs: the one place it happens.

Keras's rules (tf-keras 2.x), used by ``Functional.call``, the loss and metric containers and
the data adapter alike:

- ``x`` as a dict is keyed by input name (the ``keras.Input`` layer names, or the keys of a
  model built on a dict of inputs); a list or tuple goes in ``model.inputs`` order.
- ``y``, ``sample_weight``, ``loss``, ``loss_weights``, ``metrics`` and ``class_weight`` as a
  dict are keyed by output name (the names of the output layers, the keys of a dict of
  outputs, or ``output_1``... for a subclassed model); a list or tuple goes in
  ``model.outputs`` order; one value (one loss, one target, one weight) applies to every
  output.

Where Keras would silently pair the wrong things (a dict key that names no input or output, a
list of the wrong length, a dict of inputs missing one) this raises a ``ValueError`` naming the
expected and the given keys. A dict that leaves an output out means "nothing for that output"
(no target: no loss), as in Keras.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from tapeflow.framework import nest


def _keys(mapping: Mapping) -> list:
    return sorted(mapping, key=str)


def model_input_names(model: Any) -> list[str] | None:
    """The names a dict `x` is keyed by, in ``model.inputs`` order (None: not known)."""
    nested = getattr(model, "_nested_inputs", None)
    if isinstance(nested, Mapping):
        return [str(k) for k in _keys(nested)]
    names = getattr(model, "input_names", None)
    return list(names) if names else None


def model_output_names(model: Any) -> list[str] | None:
    """The names a dict `y` (or loss, metrics...) is keyed by, in ``model.outputs`` order:
    the keys of a dict of outputs, else the output layers' names (None: not known before the
    model runs, as for a subclassed model)."""
    nested = getattr(model, "_nested_outputs", None)
    if isinstance(nested, Mapping):
        return [str(k) for k in _keys(nested)]
    names = getattr(model, "output_names", None)
    return list(names) if names else None


def check_data(model: Any, x: Any, y: Any, sample_weight: Any) -> None:
    """Raise now, before any step runs, if `x`, `y` or `sample_weight` cannot be paired with
    the model's inputs and outputs."""
    input_names = model_input_names(model)
    if input_names is not None and x is not None:
        flatten_inputs(x, input_names, model.name)
    output_names = model_output_names(model)
    if output_names is not None:
        per_output(y, output_names, "y")
        per_output(sample_weight, output_names, "sample_weight")


def flatten_inputs(x: Any, input_names: list[str], model_name: str) -> list:
    """`x` as a flat list in ``model.inputs`` order: a dict by input name, a list by position."""
    if isinstance(x, Mapping):
        missing = [name for name in input_names if name not in x]
        if missing:
            raise ValueError(
                f"Model {model_name!r}: the input dict has no entry for input(s) {missing}. "
                f"Expected keys: {input_names}; given keys: {_keys(x)}.")
        extra = [k for k in x if k not in input_names]
        if extra:  # Keras warns and ignores them
            warnings.warn(f"Model {model_name!r}: input dict keys {sorted(map(str, extra))} "
                          f"match no model input (expected {input_names}); they are ignored.",
                          stacklevel=3)
        return [x[name] for name in input_names]
    flat = nest.flatten(x)
    if len(flat) != len(input_names):
        raise ValueError(
            f"Model {model_name!r} expects {len(input_names)} input(s) {input_names}, but it "
            f"received {len(flat)} input tensors.")
    return flat


def output_names_for(y_pred: Any, output_names: list[str] | None) -> list[str]:
    """The names outputs are keyed by: a dict of outputs uses its keys, otherwise the model's
    output names, or Keras's pseudo names ``output_1``... when the model has none."""
    if isinstance(y_pred, Mapping):
        return [str(k) for k in _keys(y_pred)]
    n = len(nest.flatten(y_pred))
    if output_names is not None and len(output_names) == n:
        return list(output_names)
    return [f"output_{i + 1}" for i in range(n)]


def is_flat_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and not any(nest.is_nested(v) for v in value)


def is_broadcast(metrics: Any) -> bool:
    """Whether a ``metrics`` spec applies to every output (one metric, or a flat list)."""
    return not nest.is_nested(metrics) or is_flat_sequence(metrics)


def per_output(struct: Any, names: list[str], what: str, broadcast_lists: bool = False) -> list:
    """One entry per output (``None``: nothing for that output), from `struct` given as a dict
    keyed by output name, a list in output order, or one value for every output.

    `broadcast_lists` is for ``metrics``: a flat list such as ``["mae", "mse"]`` is the list of
    metrics of every output, not one metric per output.
    """
    n = len(names)
    if struct is None:
        return [None] * n
    if isinstance(struct, Mapping):
        extra = [k for k in struct if k not in names]
        if extra:
            raise ValueError(
                f"`{what}` has key(s) {sorted(map(str, extra))} that match no model output. "
                f"Expected keys (output names): {names}; given keys: {_keys(struct)}.")
        return [struct.get(name) for name in names]
    if broadcast_lists and is_flat_sequence(struct):
        return [list(struct)] * n
    if isinstance(struct, (list, tuple)):
        if len(struct) != n and not broadcast_lists and len(nest.flatten(struct)) == n:
            return nest.flatten(struct)  # nested outputs, flattened as Keras flattens them
        if len(struct) != n:
            raise ValueError(
                f"`{what}` is a {type(struct).__name__} of {len(struct)} entries, but the model "
                f"has {n} output(s) {names}: give one entry per output, in this order, or a "
                "dict keyed by output name.")
        return list(struct)
    return [struct] * n


def class_weights_per_output(class_weight: Any, names: list[str]) -> list:
    """``class_weight`` as one ``{class: weight}`` dict (or None) per output.

    A plain ``{class: weight}`` dict is for a single-output model, as in Keras; for several
    outputs give a dict keyed by output name of such dicts.
    """
    if class_weight is None:
        return [None] * len(names)
    if not isinstance(class_weight, Mapping):
        raise TypeError(f"`class_weight` must be a dict, got {type(class_weight).__name__}.")
    if class_weight and all(isinstance(k, str) for k in class_weight):
        return per_output(class_weight, names, "class_weight")
    if len(names) != 1:
        raise ValueError(
            "`class_weight` as {class: weight} is only supported for models with a single "
            f"output; this model has outputs {names}: key it by output name instead, e.g. "
            f"{{{names[0]!r}: {{0: 1.0, 1: 2.0}}}}.")
    return [class_weight]
