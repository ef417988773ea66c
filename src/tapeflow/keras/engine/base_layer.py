"""``tf.keras.layers.Layer``: state (weights) plus a computation (``call``), built lazily.

A layer learns its input shape from its first call: ``__call__`` runs ``build(input_shape)``
once inside the layer's name scope, so weights come out named ``dense/kernel:0``. Weights and
sub-layers are found by walking the layer's attributes (and lists/dicts/tuples of them), so a
subclassed model needs no registration calls. The ``training`` flag flows from the outermost
call down to every sub-layer through a per-thread call context, even through a ``call`` that
does not take ``training`` itself.
"""

from __future__ import annotations

import inspect
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import nest
from tapeflow.framework import tensor as _tensor_module
from tapeflow.framework.composite import CompositeTensor
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import state as _state
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras import backend
from tapeflow.keras.engine.input_spec import InputSpec, assert_input_compatibility
from tapeflow.keras.mixed_precision.autocast_variable import _autocast

# Attributes the engine keeps for itself: never walked when gathering weights and sub-layers
# (they point at other layers' graph nodes, not at owned state).
_UNTRACKED = frozenset({
    "_inbound_nodes", "_outbound_nodes", "_eager_losses", "_regularized", "_call_id",
    "_batch_input_shape", "_compiled", "_history_nodes", "_input_specs", "_nodes_by_depth",
    "_output_specs", "_train_fn", "_test_fn", "_predict_fn", "history", "stop_training",
    "optimizer", "compiled_loss", "compiled_metrics", "_loss_spec", "_metric_specs",
    "_callbacks_model", "inputs", "outputs", "_input_layers", "_output_layers",
    "_added_metrics", "_weights_cache", "_compute_np", "_input_spec",
    "_unowned_layer",  # a layer referred to, not owned (Bidirectional's original layer)
})

_KNOWN_KWARGS = frozenset({"input_shape", "batch_input_shape", "batch_size", "input_dim",
                           "weights", "activity_regularizer", "autocast", "dynamic"})


class _CallContext:
    """What the outermost layer call decided, visible to the layers it calls (one per thread:
    ``call_context``)."""

    __slots__ = ("training", "depth", "call_id")

    def __init__(self) -> None:
        self.training: Any = None
        self.depth = 0
        self.call_id = 0


class _PerThread(threading.local):
    """Each thread's call context, a plain object: a thread-local's attribute costs ~40 ns a
    read, a slot ~5 ns, and a layer call reads and writes the context ~15 times."""

    def __init__(self) -> None:
        self.context = _CallContext()


_threads = _PerThread()
_call_ids = itertools.count(1)
# Bumped whenever any layer gains, loses or replaces a tracked attribute: cached weight lists
# (``Layer._gather``) made under an older epoch are walked again.
_structure = [0]
_signature_cache: dict[type, tuple[bool, bool, Any, bool]] = {}


def call_context() -> _CallContext:
    """The per-thread call context (read by models and by layers such as Dropout)."""
    return _threads.context


def _call_signature(cls: type) -> tuple[bool, bool, Any, bool]:
    """(call accepts `training`, call accepts `mask`, default of `training`, the class has its
    own `compute_mask`) for a class."""
    cached = _signature_cache.get(cls)
    if cached is None:
        params = inspect.signature(cls.call).parameters
        has_kwargs = any(p.kind == p.VAR_KEYWORD for p in params.values())
        training = params.get("training")
        cached = ("training" in params or has_kwargs, "mask" in params,
                  None if training is None or training.default is inspect.Parameter.empty
                  else training.default, cls.compute_mask is not Layer.compute_mask)
        _signature_cache[cls] = cached
    return cached


def _resolve_initializer(initializer: Any, dtype: _dtypes.DType) -> Any:
    from tapeflow.keras import initializers

    if initializer is None:
        initializer = "glorot_uniform" if dtype.is_floating else "zeros"
    return initializers.get(initializer)


def _resolve_regularizer(regularizer: Any) -> Any:
    if regularizer is None:
        return None
    from tapeflow.keras import regularizers

    return regularizers.get(regularizer)


def _resolve_constraint(constraint: Any) -> Any:
    from tapeflow.keras import constraints

    try:
        return constraints.get(constraint)
    except ValueError as e:
        raise ValueError(f"add_weight: {e}") from None


def _holds_state(value: Any) -> bool:
    flat = nest.flatten(value)
    return bool(flat) and all(isinstance(v, (Layer, Variable)) for v in flat)


def _contents(container: list | dict) -> tuple:
    """The identities of what a list or dict holds (a cached weight walk's check)."""
    return tuple(map(id, container.values() if isinstance(container, dict) else container))


def _shape_of(x: Any) -> TensorShape:
    return x.shape if isinstance(x.shape, TensorShape) else as_shape(x.shape)


def _input_masks(inputs: Any) -> Any:
    """The ``_keras_mask`` of the inputs (packed like them), or None when none has one
    (``__call__`` asks only once a mask exists in the process)."""
    if isinstance(inputs, Tensor):  # the common case: one tensor
        return getattr(inputs, "_keras_mask", None)
    flat = nest.flatten(inputs)
    found = [getattr(x, "_keras_mask", None) for x in flat]
    if all(m is None for m in found):
        return None
    return nest.pack_sequence_as(inputs, found)


def _set_output_masks(outputs: Any, masks: Any) -> None:
    """Attach `masks` to the outputs as ``_keras_mask`` (outputs that already carry one, as a
    layer returning its input, keep it)."""
    if masks is None:
        return
    flat = nest.flatten(outputs)
    flat_masks = list(masks) if isinstance(masks, (list, tuple)) else [masks]
    for out, mask in zip(flat, flat_masks):
        if getattr(out, "_keras_mask", None) is None and mask is not None:
            try:
                out._keras_mask = mask
            except AttributeError:  # a NumPy array or another object without the slot
                pass


class Layer:
    """Base class of every Keras layer and model.

    Subclasses create weights in ``build(input_shape)`` with ``add_weight`` and compute in
    ``call(inputs, training=None)``; calling the layer builds it on first use::

        class Scale(Layer):
            def build(self, input_shape):
                self.w = self.add_weight("w", shape=(input_shape[-1],), initializer="ones")

            def call(self, x):
                return x * self.w
    """

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 dynamic: bool = False, **kwargs: Any):
        unknown = set(kwargs) - _KNOWN_KWARGS
        if unknown:
            raise TypeError(f"{type(self).__name__}: keyword argument(s) not understood: "
                            f"{sorted(unknown)}")
        if name is None:
            name = backend.unique_object_name(backend.to_snake_case(type(self).__name__))
        elif not isinstance(name, str):
            raise TypeError(f"Layer name must be a string, got {name!r}")
        else:
            backend.observe_object_name(name)
        self._name = name
        self._trainable = bool(trainable)
        self._set_dtype_policy(dtype)
        self._autocast = kwargs.get("autocast", True)
        self.dynamic = dynamic
        self.built = False
        # as Keras: a layer with its own compute_mask supports masking
        self.supports_masking = self._passes_mask or \
            type(self).compute_mask is not Layer.compute_mask
        self._input_spec = None
        self._own_weights: list[Variable] = []
        self._regularized: list[tuple[Any, Variable]] = []
        self._eager_losses: list[Any] = []
        self._added_metrics: dict[str, Any] = {}
        self._call_id = 0
        self._inbound_nodes: list[Any] = []
        self._outbound_nodes: list[Any] = []
        self.activity_regularizer = _resolve_regularizer(kwargs.get("activity_regularizer"))
        self._initial_weights = kwargs.get("weights")
        batch_shape = kwargs.get("batch_input_shape")
        if batch_shape is None and "input_shape" in kwargs:
            batch_shape = (kwargs.get("batch_size"),) + tuple(kwargs["input_shape"])
        elif batch_shape is None and "input_dim" in kwargs:
            batch_shape = (kwargs.get("batch_size"), kwargs["input_dim"])
        self._batch_input_shape = None if batch_shape is None else tuple(batch_shape)

    def __setattr__(self, name: str, value: Any) -> None:
        # Keras's construction-time check: a sub-layer or variable assigned before
        # Layer.__init__ ran (one dict lookup once the layer is initialised)
        if "_name" not in self.__dict__ and _holds_state(value):
            raise RuntimeError(self._missing_super_message())
        if name not in _UNTRACKED:
            _structure[0] += 1
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        _structure[0] += 1
        object.__delattr__(self, name)

    def _missing_super_message(self) -> str:
        return (f"You must call `super().__init__()` in the layer constructor "
                f"({type(self).__name__}.__init__).")

    # --- identity -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> str:
        """The dtype of the layer's weights, as a string (``'float32'``), as Keras gives it."""
        return self._dtype.name

    @property
    def variable_dtype(self) -> str:
        return self._dtype.name

    @property
    def compute_dtype(self) -> str:
        """The dtype inputs are cast to and weights are read as (``float16`` under
        ``mixed_float16``)."""
        return self._compute_dtype.name

    @property
    def dtype_policy(self) -> Any:
        return self._dtype_policy

    def _set_dtype_policy(self, dtype: Any) -> None:
        """`dtype` (None: the global policy; a name, DType, Policy or its config) decides the
        variable dtype (``_dtype``) and the compute dtype; ``_autocast_dtype`` is the compute
        dtype when it differs (a mixed policy), else None."""
        from tapeflow.keras.mixed_precision import policy as _policy

        policy = _policy.get(dtype)
        self._dtype_policy = policy
        self._dtype = _dtypes.as_dtype(policy.variable_dtype or backend.floatx())
        self._compute_dtype = _dtypes.as_dtype(policy.compute_dtype or backend.floatx())
        self._autocast_dtype = self._compute_dtype if self._compute_dtype is not self._dtype \
            else None
        self._compute_np = self._compute_dtype._np  # inputs of this NumPy dtype need no cast

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        for layer in self._flatten_layers(include_self=True):
            layer._trainable = bool(value)

    # --- building -------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Create the weights once the input shape is known (subclasses override)."""
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The layer's computation (subclasses override); the base layer is the identity."""
        return inputs

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        shapes = nest.map_structure(_shape_of, inputs)
        self._build_input_shape = nest.map_structure(  # recorded for saving (build_config)
            lambda s: s.as_list() if s.rank is not None else None, shapes)
        previous = _state.name_scope
        _state.name_scope = f"{previous}/{self._name}" if previous else self._name
        try:
            self.build(shapes)
        finally:
            _state.name_scope = previous
        self.built = True
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def add_weight(self, name: str | None = None, shape: Any = None, dtype: Any = None,
                   initializer: Any = None, regularizer: Any = None, trainable: bool | None = None,
                   constraint: Any = None, use_resource: Any = None, synchronization: Any = None,
                   aggregation: Any = None, **kwargs: Any) -> Variable:
        """Create a variable owned by this layer, named ``<layer scope>/<name>:0``."""
        shape = () if shape is None else tuple(as_shape(shape).as_list())
        if any(d is None for d in shape):
            raise ValueError(f"Layer {self._name}: add_weight({name!r}) needs a fully defined "
                             f"shape, got {shape}")
        dt = _dtypes.as_dtype(dtype) if dtype is not None else self._dtype
        if trainable is None:
            trainable = True
        if synchronization == 3:  # VariableSynchronization.ON_READ: metric/statistic state
            trainable = False
        init = _resolve_initializer(initializer, dt)
        variable = Variable(lambda: init(shape, dtype=dt), trainable=trainable,
                            name=name or "Variable", dtype=dt,
                            constraint=_resolve_constraint(constraint),
                            synchronization=synchronization, aggregation=aggregation)
        # a ShardedVariable (ParameterServerStrategy's partitioner): the layer's weights are
        # its shards, as in Keras
        sharded = getattr(variable, "_is_sharded_variable", False)
        self._own_weights.extend(variable.variables if sharded else [variable])
        from tapeflow.train.deferred import restore_on_create

        restore_on_create(self, name, variable)  # a checkpoint restored before build
        reg = _resolve_regularizer(regularizer)
        if reg is not None:
            self._regularized.append((reg, variable))
        if self._autocast_dtype is not None and dt.is_floating and \
                kwargs.get("experimental_autocast", True) and not sharded:
            from tapeflow.keras.mixed_precision.autocast_variable import AutoCastVariable

            return AutoCastVariable(variable)  # the layer reads it in its compute dtype
        return variable

    # --- calling --------------------------------------------------------------------
    @property
    def input_spec(self) -> Any:
        """`InputSpec` (or a nested structure of them, one per input) every call is checked
        against before the layer builds or runs; None checks nothing."""
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value: Any) -> None:
        for v in nest.flatten(value):
            if v is not None and not isinstance(v, InputSpec):
                raise TypeError(f"Layer input_spec must be an instance of InputSpec. Got: {v}")
        self._input_spec = value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args:
            inputs, args = args[0], args[1:]
        elif "inputs" in kwargs:
            inputs = kwargs.pop("inputs")
        else:
            raise TypeError(f"Layer {self._name} was called without inputs")
        if self._input_spec is not None:  # before any cast: the dtype the caller passed
            assert_input_compatibility(self._input_spec, inputs, self._name)
        if type(inputs) is not EagerTensor or (inputs._value.dtype is not self._compute_np
                                                and self._needs_cast(inputs)):
            # the fast path above: one eager tensor the layer takes as it is
            flat = nest.flatten(inputs)
            if any(getattr(x, "_is_keras_tensor", False) for x in flat):
                from tapeflow.keras.engine import functional

                return functional.symbolic_call(self, inputs, args, kwargs)
            inputs = self._convert_inputs(inputs, flat)
        accepts_training, accepts_mask, default_training, own_mask = \
            _signature_cache.get(type(self)) or _call_signature(type(self))
        ctx = _threads.context
        if "training" in kwargs:
            training = kwargs["training"]
            if training is None:
                training = ctx.training if ctx.training is not None else default_training
        else:
            training = ctx.training if ctx.training is not None else default_training
        if accepts_training:
            if training is not None or "training" in kwargs:
                kwargs["training"] = training
        else:
            kwargs.pop("training", None)
        masks = None
        if "mask" in kwargs:
            masks = kwargs["mask"] if accepts_mask else kwargs.pop("mask")
        elif _tensor_module.masks_attached and (accepts_mask or self.supports_masking):
            masks = _input_masks(inputs)
            if masks is not None and accepts_mask:
                kwargs["mask"] = masks
        outer_training, outer_id = ctx.training, ctx.call_id
        if ctx.depth == 0:
            ctx.call_id = next(_call_ids)
        if self._call_id != ctx.call_id:  # engine attributes: no structure change to note
            own = self.__dict__
            if own["_eager_losses"]:
                own["_eager_losses"] = []
            own["_call_id"] = ctx.call_id
        previous_scope = _state.name_scope
        ctx.depth += 1
        ctx.training = training
        try:
            if not self.built:
                self._maybe_build(inputs)
            _state.name_scope = f"{previous_scope}/{self._name}" if previous_scope \
                else self._name
            if self._autocast_dtype is None and _autocast.dtype is None:
                outputs = self.call(inputs, *args, **kwargs)
            else:  # mixed precision: AutoCastVariables read as this layer's compute dtype
                outer_autocast, _autocast.dtype = _autocast.dtype, self._autocast_dtype
                try:
                    outputs = self.call(inputs, *args, **kwargs)
                finally:
                    _autocast.dtype = outer_autocast
        finally:
            _state.name_scope = previous_scope
            ctx.depth -= 1
            ctx.training = outer_training
            if ctx.depth == 0:
                ctx.call_id = outer_id
        if self.supports_masking and (masks is not None or own_mask):
            _set_output_masks(outputs, self.compute_mask(inputs, masks))
        if self.activity_regularizer is not None:
            self._add_activity_loss(outputs)
        return outputs

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The mask of the outputs: the input mask for layers that support masking, else
        None (Keras's default; Embedding, Masking, RNNs, merges... override it)."""
        if not self.supports_masking:
            if any(m is not None for m in nest.flatten(mask)):
                raise TypeError(f"Layer {self._name} does not support masking, but was passed "
                                f"an input_mask: {mask}")
            return None
        return mask

    _compute_np: np.dtype | None = None  # set with the dtype policy (_set_dtype_policy)

    # Layers that hand their input mask on to their outputs unchanged (Keras's
    # ``supports_masking = True`` without a compute_mask of their own: Dense, Dropout...)
    _passes_mask = False

    # Layers whose math needs floats cast integer inputs too (Keras's Dense, BatchNormalization
    # and LayerNormalization do); every other layer passes integers through (Embedding, lookups,
    # Flatten, Add...), and autocast proper only touches floating inputs.
    _cast_integer_inputs = False

    def _needs_cast(self, x: Any) -> bool:
        dtype = x.dtype
        if dtype is self._compute_dtype or not self._compute_dtype.is_floating:
            return False
        return (self._autocast and dtype.is_floating) or (
            self._cast_integer_inputs and (dtype.is_integer or dtype.is_bool))

    def _convert_inputs(self, inputs: Any, flat: list) -> Any:
        """NumPy/Python inputs become tensors; inputs are cast to the layer's compute dtype
        where Keras 2 casts them (autocast of floating inputs, and integer inputs of layers
        with ``_cast_integer_inputs``)."""
        if all(isinstance(x, (Tensor, Variable)) and not self._needs_cast(x) for x in flat):
            return inputs

        def convert(x: Any) -> Any:
            if isinstance(x, (np.ndarray, list, float, int, np.generic)):
                x = convert_to_tensor(x)
            if isinstance(x, (Tensor, Variable)) and self._needs_cast(x):
                from tapeflow.ops.math_ops import cast

                x = cast(x, self._compute_dtype)
            elif isinstance(x, CompositeTensor) and hasattr(x, "with_flat_values") and \
                    self._needs_cast(x):
                x = x.with_flat_values(self._convert_inputs(x.flat_values, [x.flat_values]))
            return x

        if isinstance(inputs, np.ndarray) or (isinstance(inputs, list) and all(
                isinstance(x, (int, float, np.generic)) for x in flat)):
            return convert(inputs)
        return nest.map_structure(convert, inputs)

    def _add_activity_loss(self, outputs: Any) -> None:
        for out in nest.flatten(outputs):
            batch = out.shape[0] if out.shape.rank and out.shape[0] is not None else 1
            self._eager_losses.append(self.activity_regularizer(out) / float(batch))

    # --- losses ---------------------------------------------------------------------
    def add_loss(self, losses: Any, **kwargs: Any) -> None:
        """Add loss tensors (or zero-argument callables) to ``self.losses``."""
        for loss in nest.flatten(losses):
            if loss is None:
                continue
            ctx = _threads.context
            if self._call_id != ctx.call_id and ctx.depth:
                self._eager_losses = []
                self._call_id = ctx.call_id
            self._eager_losses.append(loss)

    def add_metric(self, value: Any, name: str | None = None, aggregation: str = "mean",
                   **kwargs: Any) -> None:
        """Track the mean of `value` over an epoch as the metric `name` (reported by ``fit``
        and ``evaluate`` like compiled metrics)."""
        if name is None:
            raise ValueError("Please provide a name for your metric like "
                             "`self.add_metric(tf.reduce_sum(inputs), name='mean_activation')`")
        if aggregation not in (None, "mean"):
            raise ValueError(f"add_metric: only aggregation='mean' is supported, got "
                             f"{aggregation!r}")
        metric = self._added_metrics.get(name)
        if metric is None:
            from tapeflow.keras import metrics

            metric = self._added_metrics[name] = metrics.Mean(name=name)
        metric.update_state(value)

    def _own_metrics(self) -> list:
        """Metric objects this layer holds in attributes or made with ``add_metric``."""
        from tapeflow.keras.metrics import Metric

        out = list(self._added_metrics.values())
        stack = [v for k, v in vars(self).items() if k not in _UNTRACKED]
        while stack:
            value = stack.pop()
            if isinstance(value, Metric):
                out.append(value)
            elif isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, (list, tuple)) and not isinstance(value, Layer):
                stack.extend(value)
        return out

    @property
    def losses(self) -> list:
        """Losses added during the last call plus regularization losses (computed now)."""
        out = []
        for layer in self._flatten_layers(include_self=True):
            for loss in layer._eager_losses:
                out.append(loss() if callable(loss) else loss)
            for reg, variable in layer._regularized:
                out.append(reg(variable))
        return out

    # --- weights --------------------------------------------------------------------
    def _tracked_values(self, containers: list | None = None) -> Iterator[Any]:
        """Variables and layers held by attributes, in assignment order, containers opened
        (the mutable ones opened are appended to `containers` when given)."""
        stack = [v for k, v in reversed(list(vars(self).items())) if k not in _UNTRACKED]
        while stack:
            value = stack.pop()
            if isinstance(value, (Layer, Variable)):
                yield value
            elif isinstance(value, dict):
                if containers is not None:
                    containers.append(value)
                stack.extend(reversed(list(value.values())))
            elif isinstance(value, (list, tuple)):
                if containers is not None and isinstance(value, list):
                    containers.append(value)
                stack.extend(reversed(value))

    def _flatten_layers(self, include_self: bool = True, recursive: bool = True,
                        containers: list | None = None) -> list:
        """This layer (optionally) and its sub-layers, depth first, each once."""
        seen = {id(self)}
        out = [self] if include_self else []

        def visit(layer: Layer) -> None:
            for value in layer._tracked_values(containers):
                if isinstance(value, Layer) and id(value) not in seen:
                    seen.add(id(value))
                    out.append(value)
                    if recursive:
                        visit(value)

        visit(self)
        return out

    def _direct_variables(self, containers: list | None = None) -> list:
        seen = set()
        out = []
        for v in itertools.chain(self._own_weights, (x for x in self._tracked_values(containers)
                                                     if isinstance(x, Variable))):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    def _gather(self, want_trainable: bool) -> list:
        """The weights, walked once and reused while the layer tree keeps its structure: no
        layer attribute set or deleted since (the structure epoch), and every list or dict
        the walk opened still holding the same objects (an in-place ``append``)."""
        cache = self.__dict__.get("_weights_cache")
        if cache is not None:
            entry = cache.get(want_trainable)
            if entry is not None and entry[0] == _structure[0] and all(
                    _contents(c) == ids for c, ids in entry[1]):
                return list(entry[2])
        else:
            cache = {}
            object.__setattr__(self, "_weights_cache", cache)
        epoch = _structure[0]
        containers: list = []
        seen: set[int] = set()
        out = []

        def visit(layer: Layer, parent_trainable: bool) -> None:
            trainable = parent_trainable and layer._trainable
            for v in layer._direct_variables(containers):
                if id(v) in seen:
                    continue
                is_trainable = trainable and v.trainable
                if is_trainable == want_trainable:
                    seen.add(id(v))
                    out.append(v)
            for sub in layer._flatten_layers(include_self=False, recursive=False,
                                             containers=containers):
                visit(sub, trainable)

        visit(self, True)
        unique = {id(c): c for c in containers}.values()
        cache[want_trainable] = (epoch, [(c, _contents(c)) for c in unique], out)
        return list(out)

    @property
    def trainable_weights(self) -> list:
        return self._gather(True)

    @property
    def non_trainable_weights(self) -> list:
        return self._gather(False)

    @property
    def weights(self) -> list:
        """Trainable weights first, then non-trainable ones (Keras's order)."""
        trainable = self.trainable_weights
        ids = {id(v) for v in trainable}
        return trainable + [v for v in self.non_trainable_weights if id(v) not in ids]

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    def get_weights(self) -> list[np.ndarray]:
        """Copies of the weight values, in ``weights`` order."""
        return [np.array(v._value, copy=True) for v in self.weights]

    def set_weights(self, weights: list) -> None:
        """Assign NumPy values to the weights, in ``weights`` order, checking every shape."""
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(
                f"You called `set_weights(weights)` on layer {self._name!r} with a weight list of "
                f"length {len(weights)}, but the layer was expecting {len(params)} weights.")
        for variable, value in zip(params, weights):
            value = np.asarray(value)
            if tuple(variable.shape.as_list()) != value.shape:
                raise ValueError(
                    f"Layer {self._name!r} weight shape {tuple(variable.shape.as_list())} "
                    f"({variable.name}) is not compatible with provided weight shape "
                    f"{value.shape}.")
        for variable, value in zip(params, weights):
            variable.assign(np.asarray(value, dtype=variable.dtype.as_numpy_dtype))

    def count_params(self) -> int:
        """Number of scalars in all weights (trainable and not), as ``summary()`` counts."""
        if not self.built:
            raise ValueError(
                f"You tried to call `count_params` on layer {self._name!r}, but the layer isn't "
                f"built. You can build it manually via: `{self._name}.build(batch_input_shape)`.")
        return int(sum(int(np.prod(v.shape.as_list())) for v in self.weights))

    def _checkpoint_dependencies(self) -> list[tuple[str, Any]]:
        """(name, child) pairs a checkpoint walks: attributes holding layers or variables."""
        return [(k, v) for k, v in vars(self).items()
                if k not in _UNTRACKED and (isinstance(v, (Layer, Variable, list, tuple, dict))
                                            or getattr(v, "_is_sharded_variable", False))]

    @property
    def submodules(self) -> list:
        return self._flatten_layers(include_self=False)

    # --- shapes and config ----------------------------------------------------------
    def compute_output_shape(self, input_shape: Any) -> Any:
        """Output shape(s) for `input_shape`, found by running the layer symbolically."""
        from tapeflow.keras.engine import functional

        return functional.infer_output_shape(self, input_shape)

    @property
    def input(self) -> Any:
        return self._node_attr("input_tensors", "input")

    @property
    def output(self) -> Any:
        return self._node_attr("output_tensors", "output")

    @property
    def input_shape(self) -> Any:
        return self._node_shape("input_tensors", "input")

    @property
    def output_shape(self) -> Any:
        return self._node_shape("output_tensors", "output")

    def _node_attr(self, attr: str, what: str) -> Any:
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self._name} is not connected, no {what} to return.")
        if len(self._inbound_nodes) > 1:
            raise AttributeError(f"Layer {self._name} has multiple inbound nodes, hence the "
                                 f"notion of \"layer {what}\" is ill-defined.")
        return getattr(self._inbound_nodes[0], attr)

    def _node_shape(self, attr: str, what: str) -> Any:
        if not self._inbound_nodes:
            if what == "input" and self._batch_input_shape is not None:
                return self._batch_input_shape
            raise AttributeError(f"The layer {self._name!r} has never been called and thus has "
                                 f"no defined {what} shape.")
        shapes = {repr(nest.map_structure(lambda t: t.shape.as_tuple(),
                                          getattr(node, attr)))
                  for node in self._inbound_nodes}
        if len(shapes) > 1:
            raise AttributeError(f"The layer {self._name!r} has multiple inbound nodes with "
                                 f"different {what} shapes.")
        return nest.map_structure(lambda t: t.shape.as_tuple(),
                                  getattr(self._inbound_nodes[0], attr))

    def get_config(self) -> dict:
        """The constructor arguments that rebuild this layer (subclasses extend it)."""
        from tapeflow.keras.mixed_precision import policy as _policy

        config = {"name": self._name, "trainable": self._trainable,
                  "dtype": _policy.serialize(self._dtype_policy)}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config: dict) -> Layer:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} name={self._name}>"
