"""The graph IR: a `Graph` of `Node`s whose outputs are `SymbolicTensor`s with static specs.

Tracing builds it through the single dispatch entry point (``dispatch.apply`` calls
``Graph.apply``), so every op's shape rule runs at trace time and bad shapes are reported at the
user's line before anything executes. Nodes are kept in creation order, which is a valid
topological order and the program order that stateful ops (assign, random, print) must keep.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.context import graph_scope, scoped_name
from tapeflow.framework.dispatch import Op, convert_operand, matching_dtype, op, probe_shape
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.variable import Variable


@op("Const", shape=lambda *, value: (value.shape, _dtypes.from_numpy(value.dtype)))
def _const(*, value):
    return value


def _placeholder_shape(*, shape, dtype, name):
    return shape, dtype


@op("Placeholder", stateful=True, shape=_placeholder_shape)
def _placeholder(*, shape, dtype, name):
    shown = "<unknown>" if shape is None else list(shape)
    raise errors.InvalidArgumentError(
        None, _placeholder.name,
        f"You must feed a value for placeholder tensor '{name}' with dtype {dtype.name} and "
        f"shape {shown}")


CONST, PLACEHOLDER = _const, _placeholder


class SymbolicTensor(Tensor):
    """An output of a graph node: static shape and dtype, no value until the graph runs."""

    __slots__ = ("graph", "node", "index", "_shape", "_dtype")

    def __init__(self, graph: Graph, node: Node, index: int, shape: TensorShape, dtype):
        self.graph = graph
        self.node = node
        self.index = index
        self._shape = shape
        self._dtype = dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def op(self) -> Node:
        return self.node

    @property
    def name(self) -> str:
        return f"{self.node.name}:{self.index}"

    def set_shape(self, shape: Any) -> None:
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self) -> list[Node]:
        return [n for n in self.graph.nodes if any(t is self for t in n.inputs)]

    # eval (TF1's Tensor.eval in a Session) is installed by compat.v1, the layer above

    def _not_allowed(self, what: str):
        return errors.OperatorNotAllowedInGraphError(
            f"{what} a symbolic tf.Tensor ({self.name}, {_spec_str(self)}) is not allowed while "
            f"building a graph: its value is unknown until the graph runs. Use tf.cond / "
            f"tf.while_loop, or let AutoGraph convert Python control flow (tf.function with "
            f"autograph=True).\n{errors.user_line()}")

    def __bool__(self) -> bool:
        raise self._not_allowed("Using as a Python `bool`")

    def __iter__(self):
        raise self._not_allowed("Iterating over")

    def __len__(self) -> int:
        raise self._not_allowed("Taking len() of")

    def __index__(self) -> int:
        raise self._not_allowed("Using as a Python index")

    __int__ = __float__ = __index__

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert the symbolic tensor {self.name} to a NumPy array: it has no value "
            f"while the graph is being built. Use tapeflow ops instead of NumPy inside traced "
            f"functions.\n{errors.user_line()}")

    def numpy(self):
        raise NotImplementedError(
            f"numpy() is only available on eager tensors; {self.name} is symbolic (built inside "
            f"a traced function or graph). Return it from the function to get its value.\n"
            f"{errors.user_line()}")

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    __str__ = __repr__


class Node:
    """One op application: op, input tensors, attributes, output tensors, source location."""

    __slots__ = ("op", "inputs", "attrs", "outputs", "name", "location", "graph", "id",
                 "control_inputs")

    def __init__(self, graph: Graph, op: Op, inputs: list, attrs: dict, name: str,
                 location: str):
        self.graph = graph
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.outputs: list[SymbolicTensor] = []
        self.name = name
        self.location = location
        self.id = next(_ids)
        self.control_inputs: list[Node] = []  # must run first (compat.v1 control_dependencies)

    @property
    def type(self) -> str:
        return self.op.name

    # run (TF1's Operation.run in a Session) is installed by compat.v1, the layer above

    def __repr__(self) -> str:
        return f"<tf.Operation '{self.name}' type={self.op.name}>"


_ids = itertools.count()


def _spec_str(t: Any) -> str:
    dims = t.shape.as_tuple()
    code = _dtypes.as_dtype(t.dtype).name
    code = _SHORT.get(code, code)
    if dims is None:
        return f"{code}[?]"
    return f"{code}[{','.join('?' if d is None else str(d) for d in dims)}]"


_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "int32": "i32", "int64": "i64",
          "int8": "i8", "int16": "i16", "uint8": "u8", "bool": "bool", "string": "str",
          "complex64": "c64", "complex128": "c128"}


class Graph:
    """A dataflow graph. As a context (``as_default``) it is a TF1-style graph (compat.v1)."""

    defers_variable_init = True   # compat.v1: variables get values when initializers run
    allows_variable_creation = True

    def __init__(self, name: str = "graph", parent: Graph | None = None):
        self.name = name
        self.parent = parent
        self.nodes: list[Node] = []
        self.inputs: list[SymbolicTensor] = []
        self.outputs: list = []
        self.captures: list[tuple[Tensor, SymbolicTensor]] = []
        self.collections: dict[str, list] = {}
        self._capture_map: dict[int, SymbolicTensor] = {}
        self._const_cache: dict[int, tuple[Any, SymbolicTensor]] = {}
        self._names: dict[str, int] = {}
        self._control: list[Node] = []
        self.building_function = False

    # --- building -----------------------------------------------------------------------
    def _unique_name(self, base: str) -> str:
        base = scoped_name(base)
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def add_node(self, op: Op, inputs: list, attrs: dict, specs: list, name: str | None = None,
                 location: str | None = None) -> Node:
        """Append a node with precomputed output specs (used by passes and tracing)."""
        node = Node(self, op, inputs, attrs, self._unique_name(name or op.name),
                    location if location is not None else errors.user_location())
        node.outputs = [SymbolicTensor(self, node, i, TensorShape(s), d)
                        for i, (s, d) in enumerate(specs)]
        node.control_inputs = list(self._control)
        self.nodes.append(node)
        return node

    def rename(self, node: Node, name: str) -> None:
        """Give `node` a user's name (an op's ``name=``), unique in the current name scope."""
        node.name = self._unique_name(name)

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Any) -> Iterator[None]:
        """Nodes created inside run after `control_inputs` (ops or tensors); None clears."""
        saved = self._control
        if control_inputs is None:
            self._control = []
        else:
            self._control = saved + [x.node if isinstance(x, SymbolicTensor) else x
                                     for x in control_inputs if x is not None]
        try:
            yield
        finally:
            self._control = saved

    def apply(self, op: Op, inputs: tuple, attrs: dict) -> tuple[list, Any]:
        """Dispatch hook: add `op` as a node; return (input tensors, symbolic output(s))."""
        hint = None
        if op.same_dtype:
            hint = matching_dtype(inputs)
        tensors = [self.convert(x, hint, op.name) for x in inputs]
        specs = [(t._shape.as_tuple(), t._dtype) for t in tensors]
        if op.same_dtype and len(specs) > 1 and any(d is not specs[0][1] for _, d in specs):
            names = ", ".join(d.name for _, d in specs)
            raise errors.InvalidArgumentError(
                None, op.name,
                f"{op.name}: inputs must have the same dtype, got ({names}); tapeflow, like "
                f"TensorFlow, never promotes silently: use tf.cast.\n{errors.user_line()}")
        out = _infer(op, specs, attrs)
        node = self.add_node(op, tensors, attrs, list(out) if op.multi_output else [out])
        outs = tuple(node.outputs) if op.multi_output else node.outputs[0]
        return tensors, outs

    def convert(self, x: Any, hint: Any = None, op_name: str | None = None) -> SymbolicTensor:
        """Any input (this graph's tensor, outer tensor, eager tensor, variable, value) -> ours."""
        if isinstance(x, SymbolicTensor):
            return x if x.graph is self else self.capture(x)
        if isinstance(x, EagerTensor):
            return self.constant(x._value, x)
        if isinstance(x, Variable):  # the op taking it links the read to the variable on tapes
            with graph_scope(self):
                return x._read()

        with graph_scope(self):
            t = convert_operand(x, hint, op_name)
        return t if isinstance(t, SymbolicTensor) and t.graph is self else self.convert(t)

    def constant(self, value: np.ndarray, owner: Any = None) -> SymbolicTensor:
        """A Const node holding `value` (one node per captured eager tensor)."""
        key = id(owner) if owner is not None else None
        if key is not None and key in self._const_cache:
            return self._const_cache[key][1]
        value = np.asarray(value)
        node = self.add_node(CONST, [], {"value": value},
                             [(value.shape, _dtypes.from_numpy(value.dtype))])
        if key is not None:
            self._const_cache[key] = (owner, node.outputs[0])
        return node.outputs[0]

    def placeholder(self, shape: Any, dtype: Any, name: str | None = None) -> SymbolicTensor:
        """A graph input with a (possibly partial) static shape."""
        dtype = _dtypes.as_dtype(dtype)
        dims = as_shape(shape).as_tuple()
        node = self.add_node(PLACEHOLDER, [], {"shape": dims, "dtype": dtype, "name": name},
                             [(dims, dtype)], name=name)
        node.attrs["name"] = node.name
        self.inputs.append(node.outputs[0])
        return node.outputs[0]

    def capture(self, outer: SymbolicTensor) -> SymbolicTensor:
        """An outer graph's tensor used inside this (sub)graph becomes an extra input."""
        g = self.parent
        while g is not None and g is not outer.graph:
            g = g.parent
        if g is None:
            raise errors.InvalidArgumentError(
                None, "capture",
                f"Tensor {outer.name} belongs to another graph ({outer.graph.name}) and cannot "
                f"be used in {self.name}.\n{errors.user_line()}")
        ph = self._capture_map.get(id(outer))
        if ph is None:
            ph = self.placeholder(outer.shape, outer.dtype, name="capture")
            self._capture_map[id(outer)] = ph
            self.captures.append((outer, ph))
        return ph

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Make this the graph ops are added to (``tf.Graph().as_default()``)."""
        with graph_scope(self):
            yield self

    # --- variables and collections (compat.v1) ---------------------------------------------
    def _root(self) -> Graph:
        g = self
        while g.parent is not None:
            g = g.parent
        return g

    def register_variable(self, var: Variable) -> None:
        root = self._root()
        root.add_to_collection("variables", var)
        if var.trainable:
            root.add_to_collection("trainable_variables", var)

    def add_to_collection(self, name: str, value: Any) -> None:
        self.collections.setdefault(name, []).append(value)

    def get_collection(self, name: str, scope: str | None = None) -> list:
        import re

        items = self.collections.get(name, [])
        if scope is None:
            return list(items)
        return [x for x in items if re.match(scope, getattr(x, "name", "") or "")]

    def get_operations(self) -> list[Node]:
        return list(self.nodes)

    def get_operation_by_name(self, name: str) -> Node:
        """The node named `name` (TensorFlow's KeyError when there is none)."""
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not "
                            f"{type(name).__name__}.")
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")

    def get_tensor_by_name(self, name: str) -> SymbolicTensor:
        """The tensor ``"<op name>:<output index>"`` (TensorFlow's errors otherwise)."""
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        form = "Tensor names must be of the form \"<op_name>:<output_index>\"."
        if ":" not in name:
            if any(n.name == name for n in self.nodes):
                raise ValueError(f"The name {name!r} refers to an Operation, not a Tensor. "
                                 f"{form}")
            raise ValueError(f"The name {name!r} looks like an (invalid) Operation name, not "
                             f"a Tensor. {form}")
        op_name, _, idx = name.partition(":")
        if not idx.isdigit():
            raise ValueError(f"The name {name!r} looks a like a Tensor name, but is not a "
                             f"valid one. {form}")
        for n in self.nodes:
            if n.name == op_name:
                if int(idx) >= len(n.outputs):
                    raise KeyError(f"The name {name!r} refers to a Tensor which does not "
                                   f"exist. The operation, {op_name!r}, exists but only has "
                                   f"{len(n.outputs)} outputs.")
                return n.outputs[int(idx)]
        raise KeyError(f"The name {name!r} refers to a Tensor which does not exist. The "
                       f"operation, {op_name!r}, does not exist in the graph.")

    def variables(self) -> list[Variable]:
        """Variables this graph reads or writes, in first-use order."""
        seen: dict[int, Variable] = {}
        for n in self.nodes:
            for v in node_variables(n):
                seen.setdefault(id(v), v)
            for sub in subgraphs(n):
                for sv in sub.variables():
                    seen.setdefault(id(sv), sv)
        return list(seen.values())

    # --- printing -----------------------------------------------------------------------
    def __str__(self) -> str:
        from tapeflow.graph.printer import format_graph

        return format_graph(self)

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.nodes)} nodes>"


class SubGraph(Graph):
    """A branch of tf.cond or the body of tf.while_loop: variable policy comes from the root."""

    @property
    def defers_variable_init(self) -> bool:  # type: ignore[override]
        return self._root().defers_variable_init

    @property
    def allows_variable_creation(self) -> bool:  # type: ignore[override]
        return self._root().allows_variable_creation

    def on_variable_created(self, var: Variable) -> None:
        hook = getattr(self._root(), "on_variable_created", None)
        if hook is not None:
            hook(var)


def node_variables(node: Node) -> list[Variable]:
    """The variables a node names as ``var`` (or, grouped, as ``vars``: an op's ``groups``)."""
    v = node.attrs.get("var")
    return [v] if isinstance(v, Variable) else list(node.attrs.get("vars") or ())


def subgraphs(node: Node) -> list[Graph]:
    """Graphs held in a node's attributes (branches of cond, body of while_loop)."""
    return [v for v in node.attrs.values() if isinstance(v, Graph)]


def _infer(op: Op, specs: list, attrs: dict):
    try:
        if op.shape_fn is not None:
            return op.shape_fn(*specs, **attrs)
        return probe_shape(op, specs, attrs)
    except errors.OpError as e:
        if e.message.startswith("op:"):  # generic shape rules do not know the op's name
            raise type(e)(None, op.name, op.name + e.message[2:]) from e
        raise
    except Exception as e:  # a shape rule or probe rejected the inputs: name op, shapes, line
        shapes = ", ".join(_spec_str(_Spec(s, d)) for s, d in specs)
        raise errors.InvalidArgumentError(
            None, op.name,
            f"{op.name} failed on inputs ({shapes}): {e}\n{errors.user_line()}") from e


class _Spec:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = TensorShape(shape)
        self.dtype = dtype



# --- mutation API (used by passes and gradient derivation) -------------------------------------


def clone(graph: Graph, name: str | None = None) -> tuple[Graph, dict[int, SymbolicTensor]]:
    """A structural copy (new nodes and tensors; attributes and sub-graphs shared) + tensor map."""
    new = object.__new__(type(graph))
    new.__dict__.update({k: v for k, v in graph.__dict__.items() if k != "_executable"})
    new.name = name or graph.name
    new.nodes, new._names = [], dict(graph._names)
    mapping: dict[int, SymbolicTensor] = {}
    nodes: dict[int, Node] = {}
    for node in graph.nodes:
        n = Node(new, node.op, [mapping[id(t)] for t in node.inputs], dict(node.attrs),
                 node.name, node.location)
        n.control_inputs = [nodes[id(c)] for c in node.control_inputs if id(c) in nodes]
        nodes[id(node)] = n
        n.outputs = [SymbolicTensor(new, n, t.index, t.shape, t.dtype) for t in node.outputs]
        for a, b in zip(node.outputs, n.outputs):
            mapping[id(a)] = b
        new.nodes.append(n)
    new.inputs = [mapping[id(t)] for t in graph.inputs]
    new.outputs = [mapping.get(id(t), t) for t in graph.outputs]
    new.captures = [(outer, mapping[id(ph)]) for outer, ph in graph.captures]
    new._capture_map = {k: mapping[id(v)] for k, v in graph._capture_map.items()}
    new._const_cache = {}
    new._control = []
    return new, mapping


def readers(graph: Graph) -> dict[int, list[int]]:
    """id(tensor) -> positions of the nodes reading it (len(nodes) stands for a graph output)."""
    found: dict[int, list[int]] = {}
    for i, node in enumerate(graph.nodes):
        for t in node.inputs:
            found.setdefault(id(t), []).append(i)
    for t in graph.outputs:
        if isinstance(t, SymbolicTensor):
            found.setdefault(id(t), []).append(len(graph.nodes))
    return found


def replace_uses(graph: Graph, old: SymbolicTensor, new: SymbolicTensor,
                 after: int = 0) -> int:
    """Point every use of `old` (in nodes from index `after`, and outputs) at `new`."""
    count = 0
    for node in graph.nodes[after:]:
        for i, t in enumerate(node.inputs):
            if t is old:
                node.inputs[i] = new
                count += 1
    for i, t in enumerate(graph.outputs):
        if t is old:
            graph.outputs[i] = new
            count += 1
    return count


def substitute(graph: Graph, at: int, op: Op, inputs: list, attrs: dict,
               takes_over: list) -> Node:
    """A node of `op` in place of node `at` (same name and source line); its i-th output takes
    over the later uses of ``takes_over[i]`` (None: a value no one reads yet)."""
    old = graph.nodes[at]
    specs = _infer(op, [(t.shape.as_tuple(), t.dtype) for t in inputs], attrs)
    node = graph.add_node(op, inputs, attrs, list(specs) if op.multi_output else [specs],
                          name=old.name, location=old.location)
    graph.nodes.pop()
    node.name = old.name
    graph.nodes[at] = node
    for t, new in zip(takes_over, node.outputs):
        if t is not None:
            replace_uses(graph, t, new, after=at + 1)
    return node


def insert(graph: Graph, at: int, op: Op, inputs: list, attrs: dict, name: str,
           location: str | None) -> Node:
    """A new node of `op` at position `at` (before the node there)."""
    specs = _infer(op, [(t.shape.as_tuple(), t.dtype) for t in inputs], attrs)
    node = graph.add_node(op, inputs, attrs, list(specs) if op.multi_output else [specs],
                          name=name, location=location)
    graph.nodes.insert(at, graph.nodes.pop())
    return node


def remove_nodes(graph: Graph, dead: set[int]) -> None:
    """Erase the nodes with ids in `dead`; refuses if a surviving node still uses one."""
    removed = {id(t) for n in graph.nodes if id(n) in dead for t in n.outputs}
    for node in graph.nodes:
        if id(node) not in dead and (any(id(t) in removed for t in node.inputs)
                                     or any(id(c) in dead for c in node.control_inputs)):
            raise errors.InternalError(None, "remove_nodes",
                                       f"cannot erase: {node.name} still uses a removed node")
    if any(id(t) in removed for t in graph.outputs if isinstance(t, SymbolicTensor)):
        raise errors.InternalError(None, "remove_nodes", "cannot erase a graph output")
    graph.nodes = [n for n in graph.nodes if id(n) not in dead]
    graph.inputs = [t for t in graph.inputs if id(t) not in removed]
