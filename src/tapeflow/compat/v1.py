"""``tf.compat.v1``: TF1 graphs, placeholders, Sessions, variable scopes, over the same graph IR.

Build a graph (``Graph().as_default()`` or ``disable_eager_execution()``), then run parts of it
with ``Session.run(fetches, feed_dict)``: only the nodes the fetches depend on run, compiled to
straight-line code once per (fetches, feeds) pair. Variables created in such a graph have no
value until their ``initializer`` runs, exactly as TF1. Names not defined here fall back to the
TF2 namespace (``tf.compat.v1.reduce_sum`` is ``tf.reduce_sum``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.compat import v1_train
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors, nest
from tapeflow.framework.context import _global as _context_global
from tapeflow.framework.context import name_scope
from tapeflow.framework.context import state as _state
from tapeflow.framework.variable import Variable
from tapeflow.graph.codegen import compile_graph
from tapeflow.graph.ir import Graph, Node, SymbolicTensor
from tapeflow.ops.control_flow_ops import group
from tapeflow.ops.variable_updates import (  # noqa: F401  (tf.compat.v1.scatter_*)
    scatter_add,
    scatter_div,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_nd_add,
    scatter_nd_sub,
    scatter_nd_update,
    scatter_sub,
    scatter_update,
)

AUTO_REUSE = "AUTO_REUSE"


class GraphKeys:
    GLOBAL_STEP = "global_step"
    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    LOCAL_VARIABLES = "local_variables"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"


# --- default graph and eager switch ------------------------------------------------------------


def _global_default() -> Graph:
    g = _context_global.get("default_graph")
    if g is None:
        g = Graph("default")
        _context_global["default_graph"] = g
    return g


def get_default_graph() -> Graph:
    """The graph ops are added to: the innermost ``as_default()`` graph, else the global one."""
    g = _state.graph
    while g is not None and g.parent is not None:
        g = g.parent
    return g if g is not None and not getattr(g, "building_function", False) \
        else _global_default()


def reset_default_graph() -> None:
    """Start a fresh global default graph."""
    new = Graph("default")
    old = _context_global.get("default_graph")
    _context_global["default_graph"] = new
    if _state.graph is old and old is not None:
        _state.graph = new


def disable_eager_execution() -> None:
    """Build graphs by default (TF1 behaviour) on this thread.

    Other threads (input-pipeline workers) keep running their ops eagerly.
    """
    g = _global_default()
    _context_global["eager_disabled"] = True
    if _state.graph is None:
        _state.graph = g


def enable_eager_execution(config: Any = None, device_policy: Any = None,
                           execution_mode: Any = None) -> None:
    """Run ops immediately again (TF2 behaviour)."""
    g = _context_global.get("default_graph")
    _context_global["eager_disabled"] = False
    if _state.graph is g:
        _state.graph = None


disable_v2_behavior = disable_eager_execution
enable_v2_behavior = enable_eager_execution


def executing_eagerly() -> bool:
    return _state.graph is None


# --- placeholders, collections ---------------------------------------------------------------


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> SymbolicTensor:
    """A graph input that must be fed in ``Session.run`` (dims may be None)."""
    if _state.graph is None:
        raise RuntimeError("tf.placeholder() is not compatible with eager execution: build a "
                           "graph (tf.compat.v1.disable_eager_execution() or "
                           "tf.Graph().as_default()) or use tf.function.")
    return get_default_graph().placeholder(shape, dtype, name=name or "Placeholder")


def get_collection(key: str, scope: str | None = None) -> list:
    return get_default_graph().get_collection(key, scope)


def add_to_collection(name: str, value: Any) -> None:
    get_default_graph().add_to_collection(name, value)


def global_variables(scope: str | None = None) -> list[Variable]:
    return get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope: str | None = None) -> list[Variable]:
    return get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def variables_initializer(var_list: list, name: str = "init"):
    """One op running the initializers of `var_list`."""
    with _graph_scope(get_default_graph()):
        return group(*[v.initializer for v in var_list])


def global_variables_initializer():
    """One op that initializes every global variable of the default graph."""
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    return variables_initializer([])


@contextlib.contextmanager
def _graph_scope(g: Graph) -> Iterator[Graph]:
    previous = _state.graph
    _state.graph = g
    try:
        yield g
    finally:
        _state.graph = previous


# --- sessions ---------------------------------------------------------------------------------


_sessions = threading.local()


def get_default_session() -> Session:
    stack = getattr(_sessions, "stack", [])
    if not stack:
        raise ValueError("No default session is registered: use `with tf.compat.v1.Session():` "
                         "or pass session=")
    return stack[-1]


def _tensor_eval(self: SymbolicTensor, feed_dict: dict | None = None, session: Any = None):
    """compat.v1 ``Tensor.eval``: run this tensor in `session` (default: the innermost open
    Session)."""
    return (session or get_default_session()).run(self, feed_dict)


def _operation_run(self: Node, feed_dict: dict | None = None, session: Any = None) -> None:
    """compat.v1 ``Operation.run``: execute this node in the default session."""
    (session or get_default_session()).run(self, feed_dict)


SymbolicTensor.eval = _tensor_eval  # installed from above: the IR knows nothing of Sessions
Node.run = _operation_run


_SCALARS: dict[type, type] = {}


def _legacy_scalar(value: Any) -> Any:
    """0-d results print like TF1 did (``0.16``, not ``np.float32(0.16)``)."""
    base = type(value)
    sub = _SCALARS.get(base)
    if sub is None:
        try:
            sub = type(base.__name__, (base,), {"__repr__": base.__str__, "__slots__": ()})
        except TypeError:
            sub = base
        _SCALARS[base] = sub
    return value if sub is base else sub(value)


class Session:
    """Runs fetches of a graph (``tf.compat.v1.Session``)."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None):
        self.graph = graph if graph is not None else get_default_graph()
        self._compiled: dict = {}
        self._reads: dict[int, SymbolicTensor] = {}
        self._closed = False

    def __enter__(self) -> Session:
        _sessions.stack = getattr(_sessions, "stack", []) + [self]
        self._scope = _graph_scope(self.graph)
        self._scope.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._scope.__exit__(*exc)
        _sessions.stack = [s for s in _sessions.stack if s is not self]
        self.close()

    def as_default(self):
        session = self

        @contextlib.contextmanager
        def scope():
            _sessions.stack = getattr(_sessions, "stack", []) + [session]
            try:
                yield session
            finally:
                _sessions.stack = [s for s in _sessions.stack if s is not session]

        return scope()

    def close(self) -> None:
        self._closed = True
        self._compiled.clear()

    def _fetch_tensor(self, x: Any) -> Any:
        if isinstance(x, str):  # "name:0" is a tensor, "name" an operation (as in TF)
            return self.graph.get_tensor_by_name(x) if ":" in x else \
                self.graph.get_operation_by_name(x)
        if isinstance(x, Variable):
            t = self._reads.get(id(x))
            if t is None:
                with _graph_scope(self.graph):
                    t = x.read_value()
                self._reads[id(x)] = t
            return t
        if isinstance(x, (SymbolicTensor, Node)):
            return x
        raise TypeError(f"Fetch argument {x!r} has invalid type {type(x).__name__}: must be a "
                        f"graph tensor, operation, variable or tensor name.\n{errors.user_line()}")

    def run(self, fetches: Any, feed_dict: dict | None = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Compute `fetches` (any nested structure), with `feed_dict` values for tensors."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        leaves = [self._fetch_tensor(x) for x in nest.flatten(fetches)]
        feeds, values = [], []
        for key, value in (feed_dict or {}).items():
            t = self._fetch_tensor(key)
            feeds.append(t)
            values.append(_feed_value(t, value))
        tensors = [t for t in leaves if isinstance(t, SymbolicTensor)]
        ops = [t for t in leaves if isinstance(t, Node)]
        key = (tuple(id(t) for t in leaves), tuple(id(t) for t in feeds), len(self.graph.nodes))
        exe = self._compiled.get(key)
        if exe is None:
            exe = compile_graph(self.graph, outputs=tensors, inputs=feeds, keep_stateful=False,
                                run_nodes=ops, name="session_run")
            self._compiled[key] = exe
        if run_metadata is not None and getattr(options, "trace_level", 0) >= 1:
            meta, outs = self._traced_run(tensors, feeds, values, ops)
            run_metadata.CopyFrom(meta)
            results = iter(outs)
        else:
            results = iter(exe(*values))
        out = [None if isinstance(t, Node) else _result(next(results)) for t in leaves]
        return nest.pack_sequence_as(fetches, out) if nest.is_nested(fetches) else out[0]


    def _traced_run(self, tensors: list, feeds: list, values: list, ops: list
                    ) -> tuple[Any, Any]:
        """Run once on an instrumented copy (``RunOptions(trace_level=...)``): the
        RunMetadata of the run (each node's compute time and output memory, named as the
        graph's GraphDef names them, what ``FileWriter.add_run_metadata`` shows) and the
        fetched values."""
        import time

        from tapeflow.summary.graph_def import node_names
        from tapeflow.summary.run_metadata import timed_run_metadata

        stats: dict = {}
        exe = compile_graph(self.graph, outputs=tensors, inputs=feeds, keep_stateful=False,
                            run_nodes=ops, name="session_run", profile=stats)
        start = time.time()
        outs = exe(*values)
        times = {node: s[0] / max(s[1], 1) for node, s in stats.items()}
        meta = timed_run_metadata(self.graph, times, start, [np.shape(v) for v in values],
                                  node_names(self.graph, tf1_names=True))
        return meta, outs


def _result(value: Any) -> Any:
    arr = np.asarray(value)
    return _legacy_scalar(arr[()]) if arr.ndim == 0 else arr


def _feed_value(t: SymbolicTensor, value: Any) -> np.ndarray:
    arr = np.asarray(value._value if hasattr(value, "_value") else value)
    dtype = t.dtype
    if dtype is not _dtypes.string:
        arr = arr.astype(dtype.as_numpy_dtype, copy=False)
    if not t.shape.is_compatible_with(arr.shape):
        raise ValueError(f"Cannot feed value of shape {arr.shape} for Tensor '{t.name}', which "
                         f"has shape {t.shape}\n{errors.user_line()}")
    return arr


class InteractiveSession(Session):
    """A Session that installs itself as the default on creation."""

    def __init__(self, target: str = "", graph: Graph | None = None, config: Any = None):
        super().__init__(target, graph, config)
        self.__enter__()


# --- variable scopes --------------------------------------------------------------------------


class VariableScope:
    """Name prefix, reuse mode and defaults for ``get_variable`` (``tf.variable_scope``)."""

    def __init__(self, name: str, reuse: Any = None, initializer: Any = None,
                 regularizer: Any = None, dtype: Any = _dtypes.float32):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.regularizer = regularizer
        self.dtype = dtype

    @property
    def original_name_scope(self) -> str:
        return self.name + "/" if self.name else ""

    def reuse_variables(self) -> None:
        self.reuse = True


_scopes = threading.local()


def get_variable_scope() -> VariableScope:
    stack = getattr(_scopes, "stack", None)
    if not stack:
        _scopes.stack = stack = [VariableScope("")]
    return stack[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope: Any = None, default_name: str | None = None,
                   values: Any = None, initializer: Any = None, regularizer: Any = None,
                   reuse: Any = None, dtype: Any = None, **kwargs: Any) -> Iterator[VariableScope]:
    """Prefix variable names; `reuse` True/AUTO_REUSE lets get_variable return existing ones."""
    parent = get_variable_scope()
    if isinstance(name_or_scope, VariableScope):
        name = name_or_scope.name
    else:
        base = name_or_scope if name_or_scope is not None else default_name
        name = f"{parent.name}/{base}" if parent.name else base
    inherited = parent.reuse if reuse is None or reuse is False and parent.reuse else reuse
    scope = VariableScope(name, inherited, initializer or parent.initializer,
                          regularizer or parent.regularizer, dtype or parent.dtype)
    _scopes.stack = _scopes.stack + [scope]
    try:
        with name_scope(name + "/"):
            yield scope
    finally:
        _scopes.stack = _scopes.stack[:-1]


def _store() -> dict:
    g = get_default_graph() if _state.graph is not None else None
    holder = g if g is not None else _eager_store
    store = holder.__dict__.setdefault("_v1_variables", {})
    return store


class _EagerStore:
    """Holds the v1 variable store of code that runs outside any Graph."""


_eager_store = _EagerStore()


def get_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Any = None, trainable: bool = True, collections: Any = None,
                 caching_device: Any = None, partitioner: Any = None, validate_shape: bool = True,
                 use_resource: Any = None, custom_getter: Any = None, constraint: Any = None,
                 **kwargs: Any) -> Variable:
    """Create the variable `scope/name`, or return it when the scope allows reuse."""
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    store = _store()
    existing = store.get(full)
    if existing is not None:
        if scope.reuse not in (True, AUTO_REUSE):
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                             f"reuse=True or reuse=tf.AUTO_REUSE in VarScope?\n"
                             f"{errors.user_line()}")
        if shape is not None and not existing.shape.is_compatible_with(shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape "
                             f"{list(shape)} and found shape {existing.shape}.")
        return existing
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         f"tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         f"VarScope?\n{errors.user_line()}")
    dt = _dtypes.as_dtype(dtype or scope.dtype)
    init = initializer if initializer is not None else scope.initializer
    value = _initial_value(init, shape, dt, full)
    with name_scope(full + "/"):
        var = Variable(value, trainable=trainable, name=name, dtype=dt)
    var._name = full + ":0"
    store[full] = var
    reg = regularizer if regularizer is not None else scope.regularizer
    if reg is not None:
        with name_scope(full + "/Regularizer/"):
            loss = reg(var)
        if loss is not None and _state.graph is not None:
            get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return var


def _initial_value(init: Any, shape: Any, dtype: _dtypes.DType, name: str) -> Any:
    if init is None:
        if shape is None:
            raise ValueError(f"get_variable {name}: the shape must be known when no "
                             f"initializer is given")
        dims = [int(d) for d in shape]
        fan_in = dims[-2] if len(dims) > 1 else (dims[0] if dims else 1)
        fan_out = dims[-1] if dims else 1
        limit = np.sqrt(6.0 / max(fan_in + fan_out, 1))
        return lambda: np.random.uniform(-limit, limit, dims).astype(dtype.as_numpy_dtype)
    if callable(init) and not hasattr(init, "dtype"):
        return lambda: init(shape, dtype=dtype)
    return init


# --- TF1 optimizers: compat/v1_train.py ------------------------------------------------------


class _FallbackToTrain(type):
    def __getattr__(cls, name: str) -> Any:
        import tapeflow.train

        return getattr(tapeflow.train, name)


class train(metaclass=_FallbackToTrain):  # noqa: N801 - a namespace, as tf.compat.v1.train
    """``tf.compat.v1.train``: TF1 optimizers; other names come from ``tf.train``."""

    Optimizer = v1_train.Optimizer


for _cls in v1_train.OPTIMIZERS:
    setattr(train, _cls.__name__, _cls)


def _global_step_holder(graph: Any = None) -> Any:
    if graph is not None:
        return graph
    return get_default_graph() if _state.graph is not None else _eager_store


def get_global_step(graph: Any = None) -> Variable | None:
    """The graph's global step variable (the collection ``GLOBAL_STEP``), or None."""
    holder = _global_step_holder(graph)
    found = holder.get_collection(GraphKeys.GLOBAL_STEP) if isinstance(holder, Graph) else \
        holder.__dict__.get("_v1_global_step", [])
    return found[0] if found else None


def create_global_step(graph: Any = None) -> Variable:
    """A new int64 step counter at 0, non-trainable, named ``global_step``."""
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    holder = _global_step_holder(graph)
    step = Variable(np.int64(0), trainable=False, name="global_step")
    if isinstance(holder, Graph):
        holder.add_to_collection(GraphKeys.GLOBAL_STEP, step)
    else:
        holder._v1_global_step = [step]
    return step


def get_or_create_global_step(graph: Any = None) -> Variable:
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


for _fn in (get_global_step, create_global_step, get_or_create_global_step):
    setattr(train, _fn.__name__, staticmethod(_fn))


# --- losses -----------------------------------------------------------------------------------


class losses:  # noqa: N801 - a namespace, as tf.compat.v1.losses
    """``tf.compat.v1.losses``: the regularization-loss collection."""

    @staticmethod
    def get_regularization_losses(scope: str | None = None) -> list:
        return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)

    @staticmethod
    def get_regularization_loss(scope: str | None = None,
                                name: str = "total_regularization_loss"):
        """Sum of the regularization losses whose names match `scope`."""
        from tapeflow.framework.constant import constant
        from tapeflow.ops.math_ops import add_n

        items = losses.get_regularization_losses(scope)
        if not items:
            return constant(0.0)
        return add_n(items) if len(items) > 1 else items[0]


def __getattr__(name: str) -> Any:
    import tapeflow

    if name.startswith("__"):
        raise AttributeError(name)
    if name in ("RunOptions", "RunMetadata"):  # TensorFlow's protos (the tensorboard package)
        from tapeflow.summary import _tb

        return getattr(_tb.proto("config_pb2"), name)
    try:
        return getattr(tapeflow, name)
    except AttributeError:
        raise AttributeError(f"module 'tapeflow.compat.v1' has no attribute {name!r}") from None

