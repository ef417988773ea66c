"""``tf.compat.v1.train.*Optimizer``: TF1's optimizers, in graphs (``minimize`` builds one update
op) and eagerly (``minimize(callable)``, ``apply_gradients``).

Each optimizer states its update once, as a rule from (gradient, variable, slots) to their new
values, elementwise. A dense gradient applies the rule to the whole variable. A
``tf.IndexedSlices`` gradient has its duplicate indices summed first (TF's
``_deduplicate_indexed_slices``), then follows TF's sparse kernel for that optimizer:

- Adam gives the dense result of the summed rows: TF's sparse Adam decays ``m`` and ``v`` on
  every row and moves every row;
- the others (``_SPARSE_ROWS``) apply the rule to the gradient's rows only: other rows keep
  their value and their slots (no momentum carried, no decay, no proximal shrinking), as
  TF's ``SparseApply*`` kernels do (for SGD and Adagrad that equals the dense result).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.variable import Variable
from tapeflow.ops import array_ops, gather_ops, math_ops, misc_ops, segment_ops
from tapeflow.ops.control_flow_ops import group
from tapeflow.ops.indexed_slices import IndexedSlices


def _deduplicate(grad: IndexedSlices) -> tuple[Any, Any]:
    """(summed rows, unique indices) of an IndexedSlices, in first-appearance order."""
    unique, position = misc_ops.unique(grad.indices)
    n = array_ops.shape(unique)[0]
    return segment_ops.unsorted_segment_sum(grad.values, position, n), unique


def _prox(prox_var: Any, lr: Any, l1: float, l2: float) -> Any:
    """TF's proximal step: soft-threshold by lr * l1, then shrink by 1 + lr * l2."""
    if l1 > 0:
        prox_var = math_ops.sign(prox_var) * math_ops.maximum(
            math_ops.abs(prox_var) - lr * l1, 0.0)
    return prox_var / (1.0 + lr * l2)


class Optimizer:
    """Base of ``tf.compat.v1.train.*Optimizer``: gradients, slots, update ops."""

    _SLOTS: tuple[str, ...] = ()  # slot names, in TF's order
    _SPARSE_ROWS = False  # an IndexedSlices gradient updates its rows only (see module doc)

    def __init__(self, learning_rate: Any, use_locking: bool = False, name: str = "Optimizer"):
        self._lr = learning_rate
        self._name = name
        self._slots: dict[tuple[int, str], Variable] = {}

    def get_name(self) -> str:
        return self._name

    def get_slot_names(self) -> list[str]:
        return sorted(self._SLOTS)

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot `name` of `var` (None before the first update, as TF)."""
        return self._slots.get((id(var), name))

    def variables(self) -> list[Variable]:
        return list(self._slots.values()) + self._non_slot_variables()

    def _non_slot_variables(self) -> list[Variable]:
        return []

    def compute_gradients(self, loss: Any, var_list: list | None = None,
                          **kwargs: Any) -> list:
        """[(gradient, variable)]: `loss` a tensor of the current graph, or (eagerly) a
        callable returning the loss."""
        from tapeflow.compat.v1 import trainable_variables

        if callable(loss):
            from tapeflow.framework.tape import GradientTape

            with GradientTape() as tape:
                value = loss()
            var_list = list(var_list) if var_list is not None else list(tape.watched_variables())
            return list(zip(tape.gradient(value, var_list), var_list))
        from tapeflow.graph.symbolic_gradients import gradients

        var_list = list(var_list) if var_list is not None else trainable_variables()
        return list(zip(gradients(loss, var_list), var_list))

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None):
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[v.name for _, v in grads_and_vars]}.")
        self._prepare()
        updates = [self._update(g, v) for g, v in pairs]
        updates.extend(self._finish())
        if global_step is not None:
            updates.append(global_step.assign_add(1))
        return group(*updates)

    def minimize(self, loss: Any, global_step: Any = None, var_list: list | None = None,
                 **kwargs: Any):
        """One op: compute the gradients of `loss` and apply them."""
        return self.apply_gradients(self.compute_gradients(loss, var_list), global_step)

    # --- the update ---------------------------------------------------------------------
    def _prepare(self) -> None:
        """Per-step values shared by all variables (Adam's bias correction)."""

    def _finish(self) -> list:
        """Updates after every variable's (Adam's beta powers)."""
        return []

    def _slot_initial(self, name: str) -> float:
        return 0.0

    def _slot(self, var: Variable, name: str) -> Variable:
        key = (id(var), name)
        if key not in self._slots:
            index = self._SLOTS.index(name)
            suffix = self._name if index == 0 else f"{self._name}_{index}"
            self._slots[key] = Variable(
                np.full(var.shape.as_list(), self._slot_initial(name), var.dtype.as_numpy_dtype),
                trainable=False, name=f"{var.name[:-2]}/{suffix}")
        return self._slots[key]

    def _rule(self, grad: Any, var: Any, slots: dict) -> tuple[Any, dict]:
        """(new variable value, {slot: new value}) from the gradient and the current values."""
        raise NotImplementedError(f"{type(self).__name__} must implement _rule")

    def _update(self, grad: Any, var: Variable):
        slots = {name: self._slot(var, name) for name in self._SLOTS}
        if isinstance(grad, IndexedSlices):
            values, indices = _deduplicate(grad)
            if self._SPARSE_ROWS:
                rows = {n: gather_ops.gather(s, indices) for n, s in slots.items()}
                new_rows, new_slot_rows = self._rule(values, gather_ops.gather(var, indices),
                                                     rows)
                writes = [slots[n].scatter_update(IndexedSlices(v, indices))
                          for n, v in new_slot_rows.items()]
                return group(*writes, var.scatter_update(IndexedSlices(new_rows, indices)))
            grad = segment_ops.unsorted_segment_sum(values, indices, array_ops.shape(var)[0])
        new_var, new_slots = self._rule(grad, var.read_value(),
                                        {n: s.read_value() for n, s in slots.items()})
        writes = [slots[n].assign(v) for n, v in new_slots.items()]
        return group(*writes, var.assign(new_var))


class GradientDescentOptimizer(Optimizer):
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, use_locking: bool = False,
                 name: str = "GradientDescent"):
        super().__init__(learning_rate, use_locking, name)

    def _rule(self, grad, var, slots):
        return var - self._lr * grad, {}


class MomentumOptimizer(Optimizer):
    """accum = momentum * accum + grad; var -= lr * accum (Nesterov: lr * (grad +
    momentum * accum))."""

    _SLOTS = ("momentum",)
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, momentum: float, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False):
        super().__init__(learning_rate, use_locking, name)
        self._momentum, self._nesterov = momentum, use_nesterov

    def _rule(self, grad, var, slots):
        accum = slots["momentum"] * self._momentum + grad
        step = grad + accum * self._momentum if self._nesterov else accum
        return var - self._lr * step, {"momentum": accum}


class AdamOptimizer(Optimizer):
    """TF1 Adam: bias correction folded into the step size from beta powers kept in two
    variables (multiplied by the betas after every update)."""

    _SLOTS = ("m", "v")

    def __init__(self, learning_rate: Any = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, use_locking: bool = False, name: str = "Adam"):
        super().__init__(learning_rate, use_locking, name)
        self._b1, self._b2, self._eps = beta1, beta2, epsilon
        self._powers: tuple[Variable, Variable] | None = None
        self._step_lr: Any = None

    def _non_slot_variables(self) -> list[Variable]:
        return list(self._powers or ())

    def _prepare(self) -> None:
        if self._powers is None:
            self._powers = (Variable(self._b1, trainable=False, name="beta1_power"),
                            Variable(self._b2, trainable=False, name="beta2_power"))
        b1p, b2p = (p.read_value() for p in self._powers)
        self._step_lr = self._lr * math_ops.sqrt(1.0 - b2p) / (1.0 - b1p)

    def _finish(self) -> list:
        return [self._powers[0].assign(self._powers[0] * self._b1),
                self._powers[1].assign(self._powers[1] * self._b2)]

    def _rule(self, grad, var, slots):
        m = slots["m"] * self._b1 + grad * (1.0 - self._b1)
        v = slots["v"] * self._b2 + grad * grad * (1.0 - self._b2)
        lr = math_ops.cast(self._step_lr, var.dtype)
        return var - lr * m / (math_ops.sqrt(v) + self._eps), {"m": m, "v": v}


class AdagradOptimizer(Optimizer):
    _SLOTS = ("accumulator",)
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad"):
        super().__init__(learning_rate, use_locking, name)
        self._initial = initial_accumulator_value

    def _slot_initial(self, name: str) -> float:
        return self._initial

    def _rule(self, grad, var, slots):
        accum = slots["accumulator"] + grad * grad
        return var - self._lr * grad * math_ops.rsqrt(accum), {"accumulator": accum}


class RMSPropOptimizer(Optimizer):
    """TF1 RMSProp: rms starts at ones; mom = momentum * mom + lr * g / sqrt(rms + eps)
    (centered: rms - mg^2 in the root)."""

    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, decay: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-10, use_locking: bool = False, centered: bool = False,
                 name: str = "RMSProp"):
        super().__init__(learning_rate, use_locking, name)
        self._decay, self._momentum, self._eps, self._centered = decay, momentum, epsilon, centered
        self._SLOTS = ("rms", "momentum", "mg") if centered else ("rms", "momentum")

    def _slot_initial(self, name: str) -> float:
        return 1.0 if name == "rms" else 0.0

    def _rule(self, grad, var, slots):
        rms = slots["rms"] + (grad * grad - slots["rms"]) * (1.0 - self._decay)
        new = {"rms": rms}
        denom = rms
        if self._centered:
            new["mg"] = slots["mg"] + (grad - slots["mg"]) * (1.0 - self._decay)
            denom = rms - new["mg"] * new["mg"]
        new["momentum"] = slots["momentum"] * self._momentum + \
            self._lr * grad * math_ops.rsqrt(denom + self._eps)
        return var - new["momentum"], new


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (TF's ApplyFtrl/ApplyFtrlV2 kernels): the variable is the closed-form
    minimiser of the linear term plus L1/L2 penalties."""

    _SLOTS = ("accum", "linear")
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "Ftrl", accum_name: str | None = None,
                 linear_name: str | None = None,
                 l2_shrinkage_regularization_strength: float = 0.0, beta: float | None = None):
        super().__init__(learning_rate, use_locking, name)
        if learning_rate_power > 0:
            raise ValueError(f"learning_rate_power ({learning_rate_power}) must be a "
                             f"non-positive float")
        self._power, self._initial = learning_rate_power, initial_accumulator_value
        self._l1, self._shrinkage = l1_regularization_strength, \
            l2_shrinkage_regularization_strength
        # TF: beta joins the L2 strength as beta / (2 * learning_rate)
        self._l2 = l2_regularization_strength + (beta or 0.0) / (2.0 * learning_rate)

    def _slot_initial(self, name: str) -> float:
        return self._initial if name == "accum" else 0.0

    def _rule(self, grad, var, slots):
        accum, p, lr = slots["accum"], self._power, self._lr
        shrunk = grad + 2.0 * self._shrinkage * var if self._shrinkage > 0 else grad
        new_accum = accum + grad * grad
        sigma = (math_ops.pow(new_accum, -p) - math_ops.pow(accum, -p)) / lr
        linear = slots["linear"] + shrunk - sigma * var
        quadratic = math_ops.pow(new_accum, -p) / lr + 2.0 * self._l2
        clipped = math_ops.maximum(math_ops.minimum(linear, self._l1), -self._l1)
        new_var = (clipped - linear) / quadratic
        return new_var, {"accum": new_accum, "linear": linear}


class AdadeltaOptimizer(Optimizer):
    _SLOTS = ("accum", "accum_update")
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.95, epsilon: float = 1e-8,
                 use_locking: bool = False, name: str = "Adadelta"):
        super().__init__(learning_rate, use_locking, name)
        self._rho, self._eps = rho, epsilon

    def _rule(self, grad, var, slots):
        accum = slots["accum"] * self._rho + grad * grad * (1.0 - self._rho)
        update = math_ops.sqrt(slots["accum_update"] + self._eps) * \
            math_ops.rsqrt(accum + self._eps) * grad
        accum_update = slots["accum_update"] * self._rho + update * update * (1.0 - self._rho)
        return var - update * self._lr, {"accum": accum, "accum_update": accum_update}


class ProximalAdagradOptimizer(Optimizer):
    _SLOTS = ("accumulator",)
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "ProximalAdagrad"):
        super().__init__(learning_rate, use_locking, name)
        self._initial = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _slot_initial(self, name: str) -> float:
        return self._initial

    def _rule(self, grad, var, slots):
        accum = slots["accumulator"] + grad * grad
        lr = self._lr * math_ops.rsqrt(accum)
        return _prox(var - grad * lr, lr, self._l1, self._l2), {"accumulator": accum}


class ProximalGradientDescentOptimizer(Optimizer):
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent"):
        super().__init__(learning_rate, use_locking, name)
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _rule(self, grad, var, slots):
        return _prox(var - grad * self._lr, self._lr, self._l1, self._l2), {}


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging: the variable is recomputed from the sums of the gradients and
    of their squares at the step ``global_step + 1`` (TF's ApplyAdagradDA)."""

    _SLOTS = ("gradient_accumulator", "gradient_squared_accumulator")
    _SPARSE_ROWS = True

    def __init__(self, learning_rate: Any, global_step: Any,
                 initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(f"initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(learning_rate, use_locking, name)
        self._global_step, self._initial = global_step, initial_gradient_squared_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._step: Any = None

    def _slot_initial(self, name: str) -> float:
        return self._initial if name == "gradient_squared_accumulator" else 0.0

    def _prepare(self) -> None:
        step = self._global_step.read_value() if hasattr(self._global_step, "read_value") \
            else self._global_step
        self._step = math_ops.cast(step, "float64") + 1.0

    def _rule(self, grad, var, slots):
        acc = slots["gradient_accumulator"] + grad
        squares = slots["gradient_squared_accumulator"] + grad * grad
        step = math_ops.cast(self._step, var.dtype)
        shrunk = math_ops.sign(acc) * math_ops.maximum(math_ops.abs(acc) - self._l1 * step,
                                                       0.0) if self._l1 > 0 else acc
        new_var = -shrunk * self._lr / (self._l2 * step * self._lr + math_ops.sqrt(squares))
        return new_var, {"gradient_accumulator": acc, "gradient_squared_accumulator": squares}


OPTIMIZERS = (GradientDescentOptimizer, MomentumOptimizer, AdamOptimizer, AdagradOptimizer,
              RMSPropOptimizer, FtrlOptimizer, AdadeltaOptimizer, ProximalAdagradOptimizer,
              ProximalGradientDescentOptimizer, AdagradDAOptimizer)
