"""The functional API: layers called on KerasTensors, and ``Model(inputs, outputs)``.

Output shapes are found by running each layer on small zero batches in eager mode, twice with
different sizes for every unknown dimension: a dimension that changes between the two runs is
reported as ``None``. This needs no per-layer shape code and stays exact for any layer whose
``call`` works eagerly (every layer does); weights are built with the true ``None``-batch shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import errors, nest
from tapeflow.framework.context import eager_scope
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import wrap
from tapeflow.keras import backend
from tapeflow.keras.engine import structures
from tapeflow.keras.engine.input_layer import InputLayer
from tapeflow.keras.engine.keras_tensor import (
    KerasTensor,
    Node,
    RaggedKerasTensor,
    SparseKerasTensor,
)
from tapeflow.keras.engine.training import Model

# (batch size, size of any other unknown dim) for the two probe runs
_PROBES = ((2, 12), (3, 16))


def _ragged_zeros(kt: RaggedKerasTensor, batch: int, other: int) -> Any:
    """A RaggedTensor of zeros for a symbolic ragged input: row i of each ragged dimension
    holds max(other - i, 1) entries, so rows differ in length as real ones do."""
    from tapeflow.ragged.tensor import RaggedTensor

    dims = kt.shape.as_list()
    splits, rows = [], batch
    for _ in range(kt.ragged_rank):
        lengths = np.maximum(other - np.arange(rows), 1)
        splits.append(np.concatenate([[0], np.cumsum(lengths)]).astype(kt.row_splits_dtype._np))
        rows = int(lengths.sum())
    inner = [other if d is None else d for d in dims[kt.ragged_rank + 1:]]
    fill = b"" if kt.dtype.name == "string" else 0
    flat = wrap(np.full([rows] + inner, fill, dtype=kt.dtype._np))
    return RaggedTensor.from_nested_row_splits(flat, [wrap(s) for s in splits], validate=False)


def _sparse_zeros(kt: SparseKerasTensor, batch: int, other: int) -> Any:
    """A SparseTensor for a symbolic sparse input: one zero entry per row, at index 0."""
    from tapeflow.sparse.tensor import SparseTensor

    dims = [batch] + [other if d is None else d for d in kt.shape.as_list()[1:]]
    index = np.zeros((batch, len(dims)), np.int64)
    index[:, 0] = np.arange(batch)
    return SparseTensor(wrap(index), wrap(np.zeros(batch, kt.dtype._np)),
                        wrap(np.asarray(dims, np.int64)))


def _zeros(kt: KerasTensor, batch: int, other: int, fill: int = 0) -> Any:
    if isinstance(kt, RaggedKerasTensor):
        return _ragged_zeros(kt, batch, other)
    if isinstance(kt, SparseKerasTensor):
        return _sparse_zeros(kt, batch, other)
    dims = kt.shape.as_list() if kt.shape.rank is not None else [None]
    shape = [(batch if i == 0 else other) if d is None else d for i, d in enumerate(dims)]
    out = wrap(np.full(shape, fill, dtype=kt.dtype._np))
    mask = getattr(kt, "_keras_mask", None)
    if mask is not None:  # a masked input: an all-kept mask, so the layer sees one
        out._keras_mask = _zeros(mask, batch, other, fill=1)
    return out


def _state_snapshot(layer: Any) -> list:
    """The values of stateful RNN states under `layer`: the zero-batch probes must not
    advance them."""
    return [(v, v.numpy()) for sub in layer._flatten_layers(include_self=True)
            for v in (getattr(sub, "states", None) or [])
            if getattr(sub, "stateful", False) and hasattr(v, "assign")]


def _probe(layer: Any, arguments: tuple, batch: int, other: int) -> list:
    flat = [_zeros(x, batch, other) if isinstance(x, KerasTensor) else x
            for x in nest.flatten(arguments)]
    inputs, args, kwargs = nest.pack_sequence_as(arguments, flat)
    with eager_scope(), np.errstate(all="ignore"):  # zeros may divide by zero, log(0)...
        out = layer(inputs, *args, **kwargs)
    return out


def _merge(a: Any, b: Any, unknown: bool) -> tuple:
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not unknown or len(sa) != len(sb):
        return sa if len(sa) == len(sb) else None
    return tuple(x if x == y else None for x, y in zip(sa, sb))


def _output_specs(layer: Any, inputs: Any, args: tuple, kwargs: dict) -> tuple[Any, list]:
    """(output structure, flat list of (shape, dtype)) of `layer` on symbolic arguments."""
    arguments = (inputs, tuple(args), dict(kwargs))
    keras_inputs = [x for x in nest.flatten(arguments) if isinstance(x, KerasTensor)]
    if not layer.built:
        layer._maybe_build(inputs)
    unknown = any(d is None for x in keras_inputs
                  for d in (x.shape.as_list() if x.shape.rank is not None else [None]))
    snapshot = _state_snapshot(layer)
    try:
        first = _probe(layer, arguments, *_PROBES[0])
        second = _probe(layer, arguments, *_PROBES[1]) if unknown else first
    except errors.OpError as e:
        shapes = ", ".join(str(x.shape.as_tuple()) for x in keras_inputs)
        raise type(e)(e.node_def, e.op, f"{e.message}\nwhile calling layer '{layer.name}' "
                      f"({type(layer).__name__}) on symbolic inputs of shapes {shapes} (run "
                      f"on zero batches of size {_PROBES[0][0]} to find its output shapes)"
                      ) from e
    for variable, value in snapshot:
        variable.assign(value)
    for sub in layer._flatten_layers(include_self=True):
        sub._eager_losses = []
        for metric in sub._added_metrics.values():  # the zero batches are not data
            metric.reset_state()
    specs = [(_merge(a, b, unknown), a.dtype, _mask_spec(a, b, unknown), _ragged_spec(a))
             for a, b in zip(nest.flatten(first), nest.flatten(second))]
    return first, specs


def _mask_spec(a: Any, b: Any, unknown: bool) -> Any:
    """The (shape, dtype) of the ``_keras_mask`` a probe output carries, or None."""
    ma, mb = getattr(a, "_keras_mask", None), getattr(b, "_keras_mask", None)
    if ma is None or mb is None:
        return None
    return _merge(ma, mb, unknown), ma.dtype


def _ragged_spec(a: Any) -> Any:
    """(ragged_rank, row_splits_dtype) of a ragged probe output, "sparse" for a SparseTensor,
    else None."""
    from tapeflow.sparse.tensor import SparseTensor

    if isinstance(a, SparseTensor):
        return "sparse"
    rank = getattr(a, "ragged_rank", None)
    return None if rank is None or isinstance(a, KerasTensor) else (rank, a.row_splits_dtype)


def _is_shape(x: Any) -> bool:
    return isinstance(x, TensorShape) or (isinstance(x, (list, tuple)) and all(
        d is None or isinstance(d, int) for d in x))


def infer_output_shape(layer: Any, input_shape: Any) -> Any:
    """``compute_output_shape`` for any layer: probe it with zero batches of `input_shape`."""
    if _is_shape(input_shape):
        inputs: Any = KerasTensor(as_shape(input_shape), layer.dtype)
    else:
        inputs = [KerasTensor(as_shape(s), layer.dtype) for s in input_shape]
    structure, specs = _output_specs(layer, inputs, (), {})
    return nest.pack_sequence_as(structure, [TensorShape(spec[0]) for spec in specs])


def symbolic_call(layer: Any, inputs: Any, args: tuple, kwargs: dict) -> Any:
    """Calling `layer` on KerasTensors: record a Node and return symbolic outputs."""
    structure, specs = _output_specs(layer, inputs, args, kwargs)
    flat = []
    for shape, dtype, mask, ragged in specs:
        if ragged is None:
            kt = KerasTensor(shape, dtype)
        elif ragged == "sparse":
            kt = SparseKerasTensor(shape, dtype)
        else:
            kt = RaggedKerasTensor(shape, dtype, ragged_rank=ragged[0],
                                   row_splits_dtype=ragged[1])
        if mask is not None:  # what `_keras_mask` the real output will carry
            kt._keras_mask = KerasTensor(*mask)
        flat.append(kt)
    outputs = nest.pack_sequence_as(structure, flat)
    Node(layer, inputs, tuple(args), dict(kwargs), outputs)
    return outputs


def _unwrap_single(x: Any) -> Any:
    return x[0] if isinstance(x, (list, tuple)) and len(x) == 1 else x


class Functional(Model):
    """A model defined by its symbolic inputs and outputs (``Model(inputs, outputs)``)."""

    def __init__(self, inputs: Any, outputs: Any, name: str | None = None,
                 trainable: bool = True, **kwargs: Any):
        if name is None:
            name = backend.unique_object_name("model")
        super().__init__(name=name, trainable=trainable, **kwargs)
        self.inputs = nest.flatten(inputs)
        self.outputs = nest.flatten(outputs)
        self._nested_inputs = _unwrap_single(inputs)
        self._nested_outputs = _unwrap_single(outputs)
        for x in self.inputs + self.outputs:
            if not isinstance(x, KerasTensor):
                raise TypeError(f"Model {self.name}: inputs and outputs must be KerasTensors "
                                f"from tf.keras.Input and layer calls, got {x!r}")
        for x in self.inputs:
            if not isinstance(x._keras_history[0], InputLayer):
                raise ValueError(f"Model {self.name}: input {x!r} does not come from "
                                 "tf.keras.Input.")
        self._nodes = self._topological_nodes()
        self._input_layers = [x._keras_history[0] for x in self.inputs]
        self._layers = self._collect_layers()
        self.built = True

    def _topological_nodes(self) -> list[Node]:
        """Nodes between inputs and outputs, each after the nodes it reads from."""
        input_ids = {id(x) for x in self.inputs}
        order: list[Node] = []
        done: set[int] = set()
        visiting: set[int] = set()
        for out in self.outputs:
            stack = [(out.node, False)]
            while stack:
                node, expanded = stack.pop()
                if id(node) in done:
                    continue
                if expanded:
                    visiting.discard(id(node))
                    done.add(id(node))
                    order.append(node)
                    continue
                if isinstance(node.layer, InputLayer) and id(node.outputs) not in input_ids:
                    accessed = [n.layer.name for n in order]
                    raise ValueError(
                        f"Graph disconnected: cannot obtain value for tensor {node.outputs!r} at "
                        f"layer {node.layer.name!r}. The following previous layers were accessed "
                        f"without issue: {accessed}")
                visiting.add(id(node))
                stack.append((node, True))
                for parent in reversed(node.keras_inputs):
                    if parent.node is not None and id(parent.node) not in done:
                        stack.append((parent.node, False))
        return order

    def _collect_layers(self) -> list:
        """The layers in Keras's order: by decreasing depth (distance to the outputs), ties in
        the order a depth-first walk from the outputs first meets them (``model.layers``,
        ``summary`` and topological weight loading depend on it)."""
        index: dict[int, int] = {}
        post: list[Node] = []
        done: set[int] = set()
        for out in self.outputs:
            stack = [(out.node, False)]
            while stack:
                node, expanded = stack.pop()
                if expanded:
                    if id(node) not in done:
                        done.add(id(node))
                        post.append(node)
                    continue
                if id(node) in done:
                    continue
                index.setdefault(id(node.layer), len(index))
                stack.append((node, True))
                for parent in reversed(node.keras_inputs):
                    if parent.node is not None and id(parent.node) not in done:
                        stack.append((parent.node, False))
        node_depth: dict[int, int] = {}
        layer_depth: dict[int, int] = {}
        layers: dict[int, Any] = {}
        for node in reversed(post):
            depth = max(node_depth.get(id(node), 0), layer_depth.get(id(node.layer), 0))
            layer_depth[id(node.layer)] = depth
            layers[id(node.layer)] = node.layer
            node_depth[id(node)] = depth
            for parent in node.parent_nodes:
                node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
        for layer in self._input_layers:  # inputs the outputs do not depend on
            if id(layer) not in layer_depth:
                layer_depth[id(layer)], index[id(layer)], layers[id(layer)] = 0, -1, layer
        order = sorted(layers, key=lambda k: (-layer_depth[k], index[k]))
        return [layers[k] for k in order]

    @property
    def layers(self) -> list:
        return list(self._layers)

    @property
    def input_names(self) -> list[str]:
        return [layer.name for layer in self._input_layers]

    @property
    def output_names(self) -> list[str]:
        return [x._keras_history[0].name for x in self.outputs]

    @property
    def input_shape(self) -> Any:
        return nest.map_structure(lambda x: x.shape.as_tuple(), self._nested_inputs)

    @property
    def output_shape(self) -> Any:
        return nest.map_structure(lambda x: x.shape.as_tuple(), self._nested_outputs)

    @property
    def input(self) -> Any:
        return self._nested_inputs

    @property
    def output(self) -> Any:
        return self._nested_outputs

    def _maybe_build(self, inputs: Any) -> None:
        self.built = True

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        flat_inputs = structures.flatten_inputs(inputs, structures.model_input_names(self),
                                                self.name)
        values = {id(k): self._cast_input(k, v) for k, v in zip(self.inputs, flat_inputs)}
        for node in self._nodes:
            if isinstance(node.layer, InputLayer):
                continue
            for kt, value in zip(node.flat_outputs, node.run(values)):
                values[id(kt)] = value
        return nest.map_structure(lambda kt: values[id(kt)], self._nested_outputs)

    @staticmethod
    def _cast_input(kt: KerasTensor, value: Any) -> Any:
        from tapeflow.framework.constant import convert_to_tensor

        if getattr(value, "dtype", None) is kt.dtype:
            return value
        if isinstance(value, np.ndarray) or not hasattr(value, "dtype"):
            return convert_to_tensor(np.asarray(value, dtype=kt.dtype._np))
        from tapeflow.ops.math_ops import cast

        return cast(value, kt.dtype)

    def get_config(self) -> dict:
        return {"name": self.name, "layers": [layer.name for layer in self._layers],
                "input_layers": self.input_names, "output_layers": self.output_names}
