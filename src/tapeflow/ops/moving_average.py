"""``tf.train.ExponentialMovingAverage``: shadow copies of variables that trail their values.

``apply(var_list)`` creates one non-trainable shadow per variable (starting at its value) and
moves each toward it: ``shadow -= (1 - decay) * (shadow - var)``, with
``decay = min(decay, (1 + num_updates) / (10 + num_updates))`` when ``num_updates`` is given.
Works eagerly and inside ``tf.function`` (the updates are variable assignments).
"""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework.variable import Variable


@export("train.ExponentialMovingAverage", "compat.v1.train.ExponentialMovingAverage")
class ExponentialMovingAverage:
    """Maintain moving averages of variables (see the module docstring)."""

    def __init__(self, decay: float, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages: dict[int, Variable] = {}

    @property
    def name(self) -> str:
        return self._name

    def _decay_now(self) -> Any:
        from tapeflow.ops import math_ops

        if self._num_updates is None:
            return self._decay
        n = math_ops.cast(self._num_updates, "float32")
        return math_ops.minimum(self._decay, (1.0 + n) / (10.0 + n))

    def apply(self, var_list: Any = None) -> Any:
        """Create shadows for new variables and move every shadow toward its variable."""
        from tapeflow.framework.context import eager_scope
        from tapeflow.ops import math_ops
        from tapeflow.ops.control_flow_ops import group

        variables = list(var_list or [])
        for v in variables:
            if not v.dtype.is_floating:
                raise TypeError(f"ExponentialMovingAverage: {v.name} is {v.dtype.name}, not a "
                                f"float variable")
            if id(v) not in self._averages:
                with eager_scope():  # created once, outside any trace (like TF's init_scope)
                    self._averages[id(v)] = Variable(v.numpy() if hasattr(v, "numpy") else v,
                                                     trainable=False,
                                                     name=f"{v.name.split(':')[0]}/{self._name}")
        decay = self._decay_now()
        updates = []
        for v in variables:
            shadow = self._averages[id(v)]
            rate = 1.0 - math_ops.cast(decay, v.dtype) if not isinstance(decay, float) \
                else 1.0 - decay
            updates.append(shadow.assign_sub(rate * (shadow - v)))
        return group(*updates)

    def average(self, var: Variable) -> Variable | None:
        """The shadow variable of `var` (None before apply)."""
        return self._averages.get(id(var))

    def average_name(self, var: Variable) -> str:
        return f"{var.name.split(':')[0]}/{self._name}"

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict:
        return {self.average_name(v): v for v in (moving_avg_variables or [])}
