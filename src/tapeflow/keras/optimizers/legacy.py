"""``tf.keras.optimizers.legacy``: the Keras 2 (optimizer_v2) classes.

Their dense updates are the Keras 2 rules the main classes implement; they differ in two
places. Adagrad divides by sqrt(accum) + epsilon. And an IndexedSlices gradient goes through
TF's sparse kernels, which (after summing duplicate indices) apply the update to the
gradient's rows only: the other rows keep their value and their slots, where the dense rule
would carry momentum into them or decay their slots. Which parts stay put on untouched rows,
as tf-keras 2.21's legacy ``_resource_apply_sparse`` does:

- SGD with momentum, RMSprop with momentum or centered, Adamax, Adadelta, Ftrl: the variable
  and every slot;
- Nadam: the variable (its ``m`` and ``v`` decay on every row);
- Adam, Adagrad, plain SGD and RMSprop: nothing (their sparse result is the dense one).

The update here is the dense one, after which the untouched rows of those parts are put back.
"""

from __future__ import annotations

from typing import Any

from tapeflow.framework.variable import Variable
from tapeflow.keras.optimizers.adadelta import Adadelta
from tapeflow.keras.optimizers.adagrad import Adagrad
from tapeflow.keras.optimizers.adam import Adam
from tapeflow.keras.optimizers.adamax import Adamax
from tapeflow.keras.optimizers.adamw import AdamW
from tapeflow.keras.optimizers.ftrl import Ftrl
from tapeflow.keras.optimizers.nadam import LegacyNadam
from tapeflow.keras.optimizers.optimizer import Optimizer
from tapeflow.keras.optimizers.rmsprop import RMSprop
from tapeflow.keras.optimizers.sgd import SGD
from tapeflow.ops import array_ops, math_ops, segment_ops
from tapeflow.ops.indexed_slices import IndexedSlices


class _RowsOnly:
    """Mixin: sparse updates leave the untouched rows of `_rows_only_parts` as they were."""

    def _rows_only_parts(self, slots: dict[str, Variable]) -> list[str]:
        """"var" and slot names whose untouched rows an IndexedSlices update keeps."""
        return ["var", *slots]

    def _update_sparse(self, grad: IndexedSlices, var: Variable, lr: Any,
                       slots: dict[str, Variable]) -> Any:
        names = self._rows_only_parts(slots)
        if not names:
            return super()._update_sparse(grad, var, lr, slots)
        parts = {n: var if n == "var" else slots[n] for n in names}
        before = {n: p.read_value() for n, p in parts.items()}
        result = super()._update_sparse(grad, var, lr, slots)
        nrows = array_ops.shape(var)[0]
        hits = segment_ops.unsorted_segment_sum(
            array_ops.ones_like(grad.indices), grad.indices, nrows)
        touched = array_ops.reshape(math_ops.greater(hits, 0),
                                    [-1] + [1] * (var.shape.rank - 1))
        for n, p in parts.items():
            p.assign(math_ops.where(touched, p.read_value(), before[n]))
        return result


def _legacy(base: type, parts: Any = None, **attributes: Any) -> type:
    """A legacy class: `base` with the row-only sparse rule (`parts(optimizer, slots)` names
    the parts kept on untouched rows; None: the variable and every slot)."""
    namespace = dict(attributes)
    if parts is not None:
        namespace["_rows_only_parts"] = lambda self, slots: parts(self, slots)
    cls = type(base.__name__, (_RowsOnly, base), namespace)
    cls.__qualname__ = base.__name__
    cls.__module__ = __name__
    cls.__doc__ = f"``tf.keras.optimizers.legacy.{base.__name__}`` (see the module docstring)."
    return cls


SGD = _legacy(SGD, lambda self, slots: ["var", *slots] if self.momentum > 0 else [])
RMSprop = _legacy(RMSprop, lambda self, slots: ["var", *slots]
                  if self.momentum > 0 or self.centered else [])
Adamax = _legacy(Adamax)
Adadelta = _legacy(Adadelta)
Ftrl = _legacy(Ftrl)
Nadam = _legacy(LegacyNadam, lambda self, slots: ["var"])
Adagrad = _legacy(Adagrad, lambda self, slots: [], _epsilon_inside_root=False)

__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Ftrl", "Nadam", "Optimizer",
           "RMSprop", "SGD"]
