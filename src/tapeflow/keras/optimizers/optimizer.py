"""The optimizer base class, with Keras 2 (``tf.keras.optimizers.legacy``) semantics.

A subclass declares its slot names and one fused update op; the base class does the rest once
per ``apply_gradients`` call: gradient checks and clipping, the learning rate (a Variable or a
schedule evaluated at ``iterations``, with the legacy ``decay``), slot creation (eagerly, also
when first called while tracing a ``function``), one update op per variable, ``iterations += 1``.
Every step is a tapeflow op, so a traced training step contains the whole update.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import eager_scope
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers import clipping
from tapeflow.keras.optimizers.schedules import LearningRateSchedule
from tapeflow.keras.optimizers.schedules import deserialize as _deserialize_schedule
from tapeflow.keras.optimizers.schedules import serialize as _serialize_schedule
from tapeflow.ops import indexed_slices
from tapeflow.ops.indexed_slices import IndexedSlices

_ALLOWED_KWARGS = {"clipnorm", "clipvalue", "global_clipnorm", "lr", "decay"}
_NO_SLOTS: dict = {}


@op("LegacyLearningRateDecay", shape=lambda lr, step, *, decay: ((), lr[1]))
def _legacy_decay(lr, step, *, decay):
    """Keras 2's ``decay=``: lr / (1 + decay * iterations)."""
    return np.asarray(lr / (1.0 + decay * float(step)), dtype=lr.dtype)


def var_bytes(copies: int) -> Callable:
    """An update op's workspace for the memory plan: `copies` new arrays of the variable's size
    (its new value and new slots, and temporaries) alive while the kernel runs."""

    def workspace(node: Any) -> int:
        var = node.attrs["var"]
        n = var.shape.num_elements()
        return 0 if n is None else copies * n * var.dtype.size

    return workspace


def var_spec(*specs: Any, var: Variable, **attrs: Any) -> tuple:
    """Shape rule of every update op: the output is the variable's new value."""
    return tuple(var.shape.as_tuple()) if var.shape.rank is not None else None, var.dtype


def scalar_safe(kernel: Callable) -> Callable:
    """An update kernel that also takes 0-d variables (a learned scale): NumPy's arithmetic
    turns 0-d arrays into scalars, which in-place (`out=`) updates refuse, so the variable and
    its slots are seen as 1-element arrays for the call and made 0-d again after it."""

    @functools.wraps(kernel)
    def run(grad: np.ndarray, *args: Any, **attrs: Any) -> np.ndarray:
        if np.ndim(grad) != 0:
            return kernel(grad, *args, **attrs)
        states = [s for s in attrs.values() if isinstance(s, Variable)]
        for s in states:
            s._value = np.reshape(s._value, 1)
        try:
            out = kernel(np.reshape(grad, 1), *args, **attrs)
        finally:
            for s in states:
                s._value = np.reshape(s._value, ())
        return np.reshape(out, ())

    return run


def bias_corrected_rate(lr: Any, step: Any, beta_1: float, beta_2: float,
                        dtype: np.dtype) -> np.generic:
    """Adam's lr * sqrt(1 - b2^t) / (1 - b1^t), t = step + 1, in the variable's dtype.

    Keras computes it in the variable's precision (0.999 in float32 is 0.99900001), which moves a
    float32 step by ~1e-6 from the float64 formula; so does this.
    """
    kind = np.dtype(dtype).type
    t, b1, b2 = kind(float(step) + 1.0), kind(beta_1), kind(beta_2)
    one = kind(1.0)
    return kind(lr) * np.sqrt(one - b2 ** t) / (one - b1 ** t)


def _aggregate_over_replicas(grads: list, variables: list, optimizer: Any) -> list | None:
    """Inside ``strategy.run`` of a multi-worker strategy: the gradients summed over every
    replica (before clipping, as TensorFlow does); on a parameter-server worker: None (they
    were sent to the servers); elsewhere: unchanged."""
    from tapeflow.distribute import strategy

    ctx = strategy.get_replica_context()
    single = strategy.ReplicaContext._aggregate_gradients
    if ctx is None or type(ctx)._aggregate_gradients is single:
        return grads  # one replica: nothing to do (IndexedSlices stay sparse)
    if getattr(ctx, "keeps_slices", False):  # a parameter-server worker: rows go as rows
        return ctx._aggregate_gradients(list(grads), variables, optimizer)
    return ctx._aggregate_gradients([indexed_slices.dense(g) for g in grads], variables, optimizer)


def adam_moments(grad: np.ndarray, m: Variable, v: Variable, beta_1: float,
                 beta_2: float) -> tuple[np.ndarray, np.ndarray]:
    """Adam's new moments: m + (g - m)(1 - b1) and v + (g^2 - v)(1 - b2), as Keras orders them."""
    new_m = np.subtract(grad, m._value)
    new_m *= 1.0 - beta_1
    new_m += m._value
    new_v = np.square(grad)
    new_v -= v._value
    new_v *= 1.0 - beta_2
    new_v += v._value
    return new_m, new_v


def owned_buffer(state: Variable) -> np.ndarray:
    """The state's array, to update in place when nothing else holds it (no tensor read from
    it is alive: its reference count is the variable's, this function's and the call's), else
    a copy: tensors already read keep their values, as TensorFlow's reads do."""
    arr = state._value
    if sys.getrefcount(arr) <= 3 and arr.base is None and arr.flags.writeable:
        return arr
    return arr.copy()


def unique_rows(values: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(summed rows, unique indices) of an IndexedSlices: duplicate rows added up, as Keras
    does before a sparse update."""
    from tapeflow.kernels import scatter

    flat = indices.reshape(-1)
    unique, inverse = np.unique(flat, return_inverse=True)
    if len(unique) == len(flat):
        return values, flat
    summed = np.zeros((len(unique),) + values.shape[1:], dtype=values.dtype)
    scatter.add_rows(summed, inverse, values)
    return summed, unique


def check_rows(op_name: str, values: np.ndarray, indices: np.ndarray, var: Variable) -> None:
    """Refuse an IndexedSlices gradient whose rows or indices do not fit its variable."""
    shape = var._value.shape
    if values.shape[1:] != shape[1:] or values.shape[:1] != indices.shape[:1] or (
            indices.size and (indices.min() < 0 or indices.max() >= shape[0])):
        raise errors.InvalidArgumentError(
            None, op_name,
            f"{op_name}: IndexedSlices gradient with values {list(values.shape)} at indices "
            f"in [{indices.min() if indices.size else 0}, "
            f"{indices.max() if indices.size else 0}] does not fit variable {var.name} of "
            f"shape {list(shape)}\n{errors.user_line()}")


def check_update(op_name: str, grad: np.ndarray, var: Variable) -> None:
    """Refuse a gradient whose shape differs from its variable (NumPy would broadcast it)."""
    if grad.shape != var._value.shape:
        raise errors.InvalidArgumentError(
            None, op_name,
            f"{op_name}: gradient of shape {list(grad.shape)} does not match variable "
            f"{var.name} of shape {list(var._value.shape)}\n{errors.user_line()}")


class Optimizer:
    """Base class of Keras optimizers: slots, learning rate, clipping and ``apply_gradients``.

    Subclasses set ``_slot_names`` (with ``_slot_initial``) and implement ``_update(grad, var,
    lr, slots)``, applying their fused update op.
    """

    _slot_names: tuple[str, ...] = ()
    _slot_initial: float = 0.0

    def __init__(self, name: str, learning_rate: Any = 0.001, **kwargs: Any):
        unknown = set(kwargs) - _ALLOWED_KWARGS
        if unknown:
            raise TypeError(f"Unexpected keyword argument passed to optimizer {name}: "
                            f"{sorted(unknown)}. Allowed: {sorted(_ALLOWED_KWARGS)}")
        if "lr" in kwargs:
            warnings.warn("The `lr` argument is deprecated, use `learning_rate` instead.",
                          DeprecationWarning, stacklevel=3)
            learning_rate = kwargs.pop("lr")
        decay = float(kwargs.pop("decay", 0.0))
        if decay < 0.0:
            raise ValueError(f"{name}: decay cannot be less than 0, got {decay}")
        if decay:
            warnings.warn("The `decay` argument is deprecated (Keras 2 legacy): use a "
                          "tf.keras.optimizers.schedules.InverseTimeDecay schedule instead.",
                          DeprecationWarning, stacklevel=3)
        for key in ("clipnorm", "clipvalue", "global_clipnorm"):
            if kwargs.get(key) is not None and kwargs[key] < 0:
                raise ValueError(f"{name}: expected {key} >= 0, got {kwargs[key]}")
        if kwargs.get("clipnorm") is not None and kwargs.get("global_clipnorm") is not None:
            raise ValueError(f"{name}: cannot accept both `clipnorm` and `global_clipnorm`, "
                             f"passed clipnorm={kwargs['clipnorm']}, "
                             f"global_clipnorm={kwargs['global_clipnorm']}")
        self._name = name
        self.clipnorm = kwargs.get("clipnorm")
        self.clipvalue = kwargs.get("clipvalue")
        self.global_clipnorm = kwargs.get("global_clipnorm")
        self._initial_decay = decay
        self._slots: dict[int, tuple[Variable, dict[str, Variable]]] = {}
        self._slot_list: list[Variable] = []
        with eager_scope():
            self._iterations = Variable(0, dtype=_dtypes.int64, trainable=False,
                                        name=f"{name}/iter")
        self._learning_rate: Any = None
        self.learning_rate = learning_rate

    # --- hyperparameters --------------------------------------------------------------------
    @property
    def iterations(self) -> Variable:
        """Number of ``apply_gradients`` calls so far (int64 Variable, checkpointed)."""
        return self._iterations

    @iterations.setter
    def iterations(self, value: Any) -> None:
        if isinstance(value, Variable):
            self._iterations = value
        else:
            self._iterations.assign(np.int64(value))

    @property
    def learning_rate(self) -> Any:
        """The learning-rate Variable, or the schedule it follows."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if isinstance(value, LearningRateSchedule) or (
                callable(value) and not isinstance(value, (Variable, Tensor))):
            self._learning_rate = value
            return
        if isinstance(value, Variable):
            self._learning_rate = value
            return
        current = self._learning_rate
        if isinstance(current, Variable):
            current.assign(np.asarray(value, dtype=current.dtype._np))
            return
        with eager_scope():
            self._learning_rate = Variable(np.float32(value), trainable=False,
                                           name=f"{self._name}/learning_rate")

    lr = learning_rate

    @property
    def decay(self) -> float:
        return self._initial_decay

    @property
    def name(self) -> str:
        return self._name

    def _lr_tensor(self) -> Any:
        """The learning rate for this step, as a tensor (or Variable) for the update ops."""
        lr = self._learning_rate
        if isinstance(lr, LearningRateSchedule):
            lr = lr(self._iterations)
        elif not isinstance(lr, Variable) and callable(lr):
            lr = convert_to_tensor(lr(), dtype=_dtypes.float32)
        if self._initial_decay:
            lr = apply(_legacy_decay, lr, self._iterations, decay=self._initial_decay)
        return lr

    def _decayed_lr(self, var_dtype: Any = _dtypes.float32) -> Tensor:
        """The learning rate the next step will use (Keras's ``_decayed_lr``)."""
        from tapeflow.ops import math_ops

        return math_ops.cast(self._lr_tensor(), var_dtype)

    # --- slots ------------------------------------------------------------------------------
    def add_slot(self, var: Variable, slot_name: str, initializer: Any = "zeros") -> Variable:
        """The slot `slot_name` of `var`, created (eagerly, once) if it does not exist yet."""
        entry = self._slots.get(var._unique_id)
        if entry is None:
            entry = self._slots[var._unique_id] = (var, {})
        slots = entry[1]
        slot = slots.get(slot_name)
        if slot is not None:
            return slot
        with eager_scope():
            if callable(initializer):
                value = initializer(shape=var.shape.as_tuple(), dtype=var.dtype)
            elif initializer == "zeros":
                value = np.zeros(var._value.shape, dtype=var.dtype._np)
            else:
                value = np.full(var._value.shape, initializer, dtype=var.dtype._np)
            base = var.name[:-2] if var.name.endswith(":0") else var.name
            slot = Variable(value, trainable=False, name=f"{self._name}/{base}/{slot_name}")
            slots[slot_name] = slot
            self._slot_list.append(slot)
            from tapeflow.train.deferred import restore_on_create

            restore_on_create(self, (var._unique_id, slot_name), slot)
        return slot

    def get_slot(self, var: Variable, slot_name: str) -> Variable:
        """The slot variable `slot_name` ('m', 'v', 'momentum', ...) of `var`."""
        entry = self._slots.get(var._unique_id)
        if entry is None or slot_name not in entry[1]:
            names = sorted(entry[1]) if entry else []
            raise KeyError(f"{self._name} has no slot {slot_name!r} for variable {var.name}; "
                           f"it has {names}" + ("" if entry else
                                                " (apply_gradients has not seen this variable)"))
        return entry[1][slot_name]

    def get_slot_names(self) -> list[str]:
        return list(self._active_slots())

    def _active_slots(self) -> tuple[str, ...]:
        return self._slot_names

    def _create_slots(self, var: Variable) -> dict[str, Variable]:
        for slot_name in self._active_slots():
            self.add_slot(var, slot_name, self._slot_initial)
        return self._slots[var._unique_id][1]

    # --- variables --------------------------------------------------------------------------
    def variables(self) -> list[Variable]:
        """The optimizer's variables: ``iterations`` first, then its own per-optimizer variables
        (Nadam's momentum product), then slots in creation order."""
        own = [v for _, v in self._extra_variables()]
        return [self._iterations] + own + list(self._slot_list)

    def _extra_variables(self) -> list[tuple[str, Variable]]:
        """(name, variable) pairs of state kept once per optimizer rather than per variable."""
        return []

    @property
    def weights(self) -> list[Variable]:
        return self.variables()

    def get_weights(self) -> list[np.ndarray]:
        return [v.numpy() for v in self.variables()]

    def set_weights(self, weights: list) -> None:
        params = self.variables()
        if len(params) != len(weights):
            raise ValueError(f"{self._name}.set_weights: got {len(weights)} arrays for "
                             f"{len(params)} optimizer variables (create the slots first by "
                             f"applying gradients once)")
        for v, w in zip(params, weights):
            w = np.asarray(w)
            if tuple(v.shape.as_tuple()) != w.shape:
                raise ValueError(f"{self._name}.set_weights: variable {v.name} has shape "
                                 f"{v.shape} but the array has shape {w.shape}")
            v.assign(w.astype(v.dtype._np))

    def _checkpoint_dependencies(self) -> list[tuple[str, Any]]:
        """Named children for ``tf.train.Checkpoint`` (slots are reported separately)."""
        deps: list[tuple[str, Any]] = [("iterations", self._iterations)]
        if isinstance(self._learning_rate, (Variable, LearningRateSchedule)):
            deps.append(("learning_rate", self._learning_rate))
        deps.extend(self._extra_variables())
        return deps

    def _checkpoint_slots(self) -> Iterable[tuple[Variable, str, Variable]]:
        """(variable, slot name, slot variable) triples, for checkpoints."""
        for var, slots in self._slots.values():
            for slot_name, slot in slots.items():
                yield var, slot_name, slot

    # --- applying gradients -----------------------------------------------------------------
    def apply_gradients(self, grads_and_vars: Iterable, name: str | None = None,
                        experimental_aggregate_gradients: bool = True,
                        global_step: Variable | None = None) -> Any:
        """Apply one update per (gradient, variable) pair; None gradients are skipped.

        ``global_step`` (TF1's ``tf.train`` optimizers, seed 002) is incremented if given.
        """
        pairs = list(grads_and_vars)
        grads, variables = [], []
        for g, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"{self._name}.apply_gradients: expected (gradient, Variable) "
                                f"pairs, got a {type(v).__name__} in place of a Variable\n"
                                f"{errors.user_line()}")
            if g is None:
                continue
            if not isinstance(g, (Tensor, IndexedSlices)):
                g = convert_to_tensor(g, dtype=v.dtype)
            elif g.dtype is not v.dtype:
                raise errors.InvalidArgumentError(
                    None, f"{self._name}.apply_gradients",
                    f"{self._name}.apply_gradients: gradient of dtype {g.dtype.name} for "
                    f"variable {v.name} of dtype {v.dtype.name}\n{errors.user_line()}")
            grads.append(g)
            variables.append(v)
        if not variables:
            names = [v.name for _, v in pairs]
            raise ValueError(f"No gradients provided for any variable: {names}. Check that the "
                             f"loss depends on them and was computed under the GradientTape.\n"
                             f"{errors.user_line()}")
        if len(variables) < len(pairs):
            skipped = [v.name for g, v in pairs if g is None]
            warnings.warn(f"Gradients do not exist for variables {skipped} when minimizing the "
                          f"loss.", stacklevel=2)
        if experimental_aggregate_gradients:
            grads = _aggregate_over_replicas(grads, variables, self)
            if grads is None:  # a parameter-server worker: the servers apply them
                return self._iterations
        grads = clipping.clip_gradients(grads, self.clipnorm, self.global_clipnorm,
                                        self.clipvalue)
        lr = self._lr_tensor()
        self._prepare_step(variables)
        slots_of = self._slots
        has_slots = bool(self._active_slots())
        slots = _NO_SLOTS
        for g, v in zip(grads, variables):
            if has_slots:
                entry = slots_of.get(v._unique_id)
                slots = entry[1] if entry is not None else self._create_slots(v)
            if type(g) is IndexedSlices:
                self._update_sparse(g, v, lr, slots)
            else:
                self._update(g, v, lr, slots)
            if v._constraint is not None:
                v.assign(v._constraint(v))
        if global_step is not None:
            global_step.assign_add(np.asarray(1, dtype=global_step.dtype._np))
        return self._iterations.assign_add(np.int64(1))

    def _prepare_step(self, variables: list[Variable]) -> None:
        """Work done once per step before the per-variable updates (none by default)."""

    def _update(self, grad: Tensor, var: Variable, lr: Any, slots: dict[str, Variable]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _update")

    def _update_sparse(self, grad: IndexedSlices, var: Variable, lr: Any,
                       slots: dict[str, Variable]) -> Any:
        """The update for an IndexedSlices gradient. tf-keras 2.21's optimizers decay their
        slots on every row and sum duplicate rows, which is the dense update of the densified
        gradient; optimizers whose untouched rows stay put (plain SGD, Adagrad) override this
        to write the touched rows only."""
        return self._update(indexed_slices.dense(grad), var, lr, slots)

    def minimize(self, loss: Any, var_list: Any, grad_loss: Any = None, name: str | None = None,
                 tape: Any = None) -> Any:
        """Compute gradients of `loss` (a callable, or a tensor with its `tape`) and apply them."""
        tape, loss, var_list = recorded_loss(loss, var_list, tape)
        grads = tape.gradient(loss, var_list, grad_loss)
        return self.apply_gradients(zip(grads, var_list), name=name)

    # --- config ------------------------------------------------------------------------------
    def _hyper_config(self) -> dict[str, Any]:
        """Subclass hyperparameters for ``get_config``."""
        return {}

    def get_config(self) -> dict[str, Any]:
        lr = self._learning_rate
        if isinstance(lr, LearningRateSchedule):
            lr_cfg: Any = _serialize_schedule(lr)
        elif isinstance(lr, Variable):
            lr_cfg = float(lr.numpy())
        else:
            lr_cfg = lr
        config = {"name": self._name, "learning_rate": lr_cfg, "decay": self._initial_decay}
        config.update(self._hyper_config())
        for key in ("clipnorm", "clipvalue", "global_clipnorm"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict | None = None) -> Optimizer:
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = _deserialize_schedule(config["learning_rate"])
        if not config.get("decay"):
            config.pop("decay", None)
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self._name!r} iterations={int(self._iterations)}>"



def recorded_loss(loss: Any, var_list: Any, tape: Any) -> tuple[Any, Any, list]:
    """`minimize`'s arguments made concrete: the tape that recorded the loss, the loss tensor
    and the variable list (a callable loss runs under a new tape watching the variables)."""
    from tapeflow.framework.tape import GradientTape

    if not callable(loss) and tape is None:
        raise ValueError("`tape` is required when a `Tensor` loss is passed to minimize.")
    if tape is None:
        tape = GradientTape()
    if callable(loss):
        with tape:
            if not callable(var_list):
                tape.watch(var_list)
            loss = loss()
    if callable(var_list):
        var_list = var_list()
    return tape, loss, list(var_list)
