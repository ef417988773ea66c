"""``tf.Variable``: mutable state that lives outside graphs and is captured by reference.

Assignment replaces the backing array rather than writing into it, so a value read earlier (and
saved by a tape for the backward pass) never changes under the tape's feet.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.context import eager_scope, scoped_name
from tapeflow.framework.context import state as _state
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import EagerTensor, Tensor, wrap

_uid = itertools.count()

# Called with each new eager Variable; tf.distribute uses it to give variables created under a
# multi-worker strategy's scope the chief's initial value.
creation_hooks: list = []
# Consulted before a Variable is made, with the constructor's arguments: the first that returns
# an object makes that the result (ParameterServerStrategy's ShardedVariable).
creators: list = []


class VariableSynchronization:
    AUTO, NONE, ON_WRITE, ON_READ = range(4)


class VariableAggregation:
    NONE, SUM, MEAN, ONLY_FIRST_REPLICA = range(4)


class Variable:
    """A named, mutable tensor (``tf.Variable``); trainable ones are watched by tapes."""

    __array_priority__ = 100

    def __new__(cls, *args: Any, **kwargs: Any):
        if creators and cls is Variable:
            for creator in creators:
                made = creator(args, kwargs)
                if made is not None:
                    return made
        return super().__new__(cls)

    def __init__(self, initial_value: Any = None, trainable: bool = True,
                 validate_shape: bool = True, caching_device: Any = None, name: str | None = None,
                 variable_def: Any = None,
                 dtype: Any = None, import_scope: Any = None, constraint: Any = None,
                 synchronization: Any = None, aggregation: Any = None, shape: Any = None,
                 experimental_enable_variable_lifting: bool = True):
        if getattr(self, "_made_by_creator", False):  # a creator returned a finished Variable
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        self._trainable = bool(trainable)
        self._constraint = constraint
        self._unique_id = next(_uid)
        base = name if name else "Variable"
        self._name = scoped_name(base.rsplit(":", 1)[0]) + ":0"
        self.synchronization = synchronization
        self.aggregation = aggregation
        dt = None if dtype is None else _dtypes.as_dtype(dtype)
        graph = _state.graph
        self._graph = None
        self._initial_value = None
        if graph is not None and getattr(graph, "defers_variable_init", False):
            # compat.v1 graphs: the value appears when the initializer op runs in a Session
            self._graph = graph
            init = initial_value() if callable(initial_value) else initial_value
            from tapeflow.framework.constant import convert_to_tensor

            init = convert_to_tensor(init, dtype=dt) if not isinstance(init, Tensor) else init
            self._initial_value = init
            self._dtype = init.dtype if dt is None else dt
            self._shape = as_shape(shape) if shape is not None else init.shape
            self._value = None
            graph.register_variable(self)
            return
        if graph is not None and not getattr(graph, "allows_variable_creation", True):
            raise ValueError(
                "tf.function only supports creating variables on the first trace: this function "
                "tried to create a new Variable on a later call. Create variables outside the "
                f"function or only once.\n{errors.user_line()}")
        with eager_scope():
            init = initial_value() if callable(initial_value) else initial_value
            if isinstance(init, Variable):
                init = init._value
            if isinstance(init, Tensor) and not isinstance(init, EagerTensor):
                raise ValueError("A Variable created while tracing needs a value that can be "
                                 "computed eagerly (use a callable initializer).")
            from tapeflow.framework.constant import convert_to_tensor

            arr = init._value if isinstance(init, EagerTensor) else \
                convert_to_tensor(init, dtype=dt)._value
            if dt is not None and arr.dtype != dt._np:
                arr = arr.astype(dt._np)
        self._value = np.array(arr, copy=True)
        self._dtype = _dtypes.from_numpy(self._value.dtype)
        self._shape = as_shape(shape) if shape is not None else TensorShape(self._value.shape)
        if graph is not None and hasattr(graph, "on_variable_created"):
            graph.on_variable_created(self)
        for hook in creation_hooks:
            hook(self)

    # --- identity -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def ndim(self) -> int | None:
        return self._shape.rank

    @property
    def constraint(self):
        return self._constraint

    @property
    def device(self) -> str:
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    @property
    def graph(self):
        return self._graph

    def __hash__(self) -> int:
        return id(self)

    # --- reading ------------------------------------------------------------------------
    def _as_tensor(self) -> Tensor:
        return self.read_value()

    # read_value / value, _read (the bare read node a graph makes of a variable input),
    # assign, assign_add, assign_sub and initializer are ops: the op library installs them
    # (ops/state_ops.py), as ops/operators.py installs the operators

    def numpy(self) -> np.ndarray:
        if self._value is None:
            raise errors.FailedPreconditionError(
                f"Attempting to use uninitialized value {self._name[:-2]}")
        return self._value.copy() if self._value.ndim else self._value[()]

    def __array__(self, dtype=None, copy=None):
        v = self._value
        return v if dtype is None else v.astype(dtype)

    def __bool__(self) -> bool:
        return bool(self.read_value())

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __index__(self) -> int:
        return int(self._value)

    def __len__(self) -> int:
        return len(self.read_value())

    def __iter__(self):
        return iter(self.read_value())

    def __format__(self, spec: str) -> str:
        return format(self.read_value(), spec)

    @property
    def initial_value(self):
        return self._initial_value if self._initial_value is not None else wrap(self._value)

    def __repr__(self) -> str:
        if self._value is None:
            return f"<tf.Variable '{self._name}' shape={self._shape} dtype={self._dtype.name}>"
        return (f"<tf.Variable '{self._name}' shape={self._shape} dtype={self._dtype.name}, "
                f"numpy={np.array(self._value)!r}>")

    def __deepcopy__(self, memo):
        return Variable(self._value.copy(), trainable=self._trainable, name=self._name[:-2])

    def __reduce__(self):
        return _rebuild_variable, (self._value, self._trainable, self._name)


def _rebuild_variable(value, trainable, name):
    v = Variable(value, trainable=trainable)
    v._name = name
    return v
