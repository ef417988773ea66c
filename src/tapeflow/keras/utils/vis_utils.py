"""``tf.keras.utils.model_to_dot`` / ``plot_model``: a model's layer graph drawn with pydot and
Graphviz (optional: ``pip install 'tapeflow[plot]'`` and Graphviz's ``dot`` program).

Node labels follow Keras 2: ``name`` (with ``show_layer_names``) and ``ClassName``, optionally
the dtype, the input/output shapes, the activation and a trainable mark; edges follow the
functional graph (a Sequential model is a chain).
"""

from __future__ import annotations

import os
from typing import Any

_INSTALL = ("You must install pydot (`pip install pydot`) and install graphviz (see "
            "instructions at https://graphviz.gitlab.io/download/) for plot_model to work.")


def _pydot() -> Any:
    try:
        import pydot
    except ImportError:
        raise ImportError(_INSTALL) from None
    return pydot


def check_graphviz() -> bool:
    """Whether pydot is installed and can run Graphviz's ``dot``."""
    try:
        pydot = _pydot()
        pydot.Dot.create(pydot.Dot())
        return True
    except (ImportError, OSError, FileNotFoundError, AssertionError, Exception):
        return False


def _shape_text(shape: Any) -> str:
    if isinstance(shape, list):
        return "[" + ", ".join(_shape_text(s) for s in shape) + "]"
    return str(tuple(shape)).replace("None", "?") if shape is not None else "?"


def _layer_shapes(layer: Any, attr: str) -> str:
    try:
        return _shape_text(getattr(layer, attr))
    except (AttributeError, ValueError, RuntimeError):
        return "multiple"


def _label(layer: Any, show_shapes: bool, show_dtype: bool, show_layer_names: bool,
           show_layer_activations: bool, show_trainable: bool) -> str:
    class_name = type(layer).__name__
    text = f"{layer.name} ({class_name})" if show_layer_names else class_name
    if show_layer_activations and getattr(layer, "activation", None) is not None:
        activation = getattr(layer.activation, "__name__", str(layer.activation))
        text = f"{text}|{activation}"
    if show_dtype:
        text = f"{text}|{layer.dtype}"
    if show_shapes:
        text = (f"{text}|{{input:|output:}}|{{{_layer_shapes(layer, 'input_shape')}|"
                f"{_layer_shapes(layer, 'output_shape')}}}")
    if show_trainable:
        text = f"{text}|{'Trainable' if layer.trainable else 'Non-trainable'}"
    return "{" + text + "}" if "|" in text else text


def _edges(model: Any) -> list[tuple[Any, Any]]:
    """(from layer, to layer) pairs of the model's graph, in layer order."""
    layers = model.layers
    if not hasattr(model, "_nodes"):  # Sequential (or subclassed): a chain of its layers
        return list(zip(layers, layers[1:]))
    members = {id(layer) for layer in layers}
    out = []
    for layer in layers:
        for node in layer._inbound_nodes:
            for x in node.keras_inputs:
                source = x._keras_history[0] if x._keras_history is not None else None
                if source is not None and id(source) in members:
                    out.append((source, layer))
    return out


def model_to_dot(model: Any, show_shapes: bool = False, show_dtype: bool = False,
                 show_layer_names: bool = True, rankdir: str = "TB", expand_nested: bool = False,
                 dpi: int = 96, subgraph: bool = False, layer_range: Any = None,
                 show_layer_activations: bool = False, show_trainable: bool = False,
                 **kwargs: Any) -> Any:
    """The model as a ``pydot.Dot`` graph (one record node per layer, edges along the data)."""
    if not check_graphviz():
        raise ImportError(_INSTALL)
    return build_dot(model, show_shapes, show_dtype, show_layer_names, rankdir, dpi,
                     layer_range, show_layer_activations, show_trainable)


def build_dot(model: Any, show_shapes: bool = False, show_dtype: bool = False,
              show_layer_names: bool = True, rankdir: str = "TB", dpi: int = 96,
              layer_range: Any = None, show_layer_activations: bool = False,
              show_trainable: bool = False) -> Any:
    """``model_to_dot``'s graph, built with pydot alone (no Graphviz needed to build it)."""
    pydot = _pydot()
    dot = pydot.Dot(graph_type="digraph")
    dot.set("rankdir", rankdir)
    dot.set("concentrate", True)
    dot.set("dpi", dpi)
    dot.set_node_defaults(shape="record")
    layers = list(model.layers)
    if layer_range is not None:
        names = [layer.name for layer in layers]
        if len(layer_range) != 2 or any(n not in names for n in layer_range):
            raise ValueError(f"layer_range must be two layer names of the model, got "
                             f"{layer_range}")
        layers = layers[names.index(layer_range[0]):names.index(layer_range[1]) + 1]
    keep = {id(layer) for layer in layers}
    for layer in layers:
        dot.add_node(pydot.Node(str(id(layer)), label=_label(
            layer, show_shapes, show_dtype, show_layer_names, show_layer_activations,
            show_trainable)))
    for source, target in _edges(model):
        if id(source) in keep and id(target) in keep:
            dot.add_edge(pydot.Edge(str(id(source)), str(id(target))))
    return dot


def plot_model(model: Any, to_file: str = "model.png", show_shapes: bool = False,
               show_dtype: bool = False, show_layer_names: bool = True, rankdir: str = "TB",
               expand_nested: bool = False, dpi: int = 96, layer_range: Any = None,
               show_layer_activations: bool = False, show_trainable: bool = False) -> Any:
    """Draw `model` to `to_file` (format from the extension: png, svg, pdf, dot ...)."""
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir,
                       expand_nested=expand_nested, dpi=dpi, layer_range=layer_range,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable)
    to_file = str(to_file)
    extension = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=extension)
    if extension != "pdf":
        try:
            from IPython import display

            return display.Image(filename=to_file)
        except ImportError:
            return None
    return None
