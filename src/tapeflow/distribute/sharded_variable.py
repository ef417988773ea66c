"""``tf.distribute.experimental.ShardedVariable``: one variable stored as row blocks.

Under a ``ParameterServerStrategy`` with a ``variable_partitioner``, ``tf.Variable(...)`` (and so
a Keras ``add_weight``) returns a ``ShardedVariable`` when the partitioner asks for more than one
shard, as in TensorFlow: ``variables`` are ordinary ``Variable`` objects named ``<name>/part_<i>``
holding consecutive blocks of rows (axis 0; the first ``rows % shards`` blocks one row longer),
each placed whole on one parameter server.

- Read as one tensor it is the concatenation of its shards (a ``concat`` of variable reads, so
  gradients reach every shard); ``assign``/``assign_add``/``assign_sub`` split the value by rows.
- ``tf.nn.embedding_lookup`` (and the Keras ``Embedding`` layer) looks each id up in the shard
  that holds its row and stitches the rows back: each shard's gradient is its own rows only.
- Keras layers list the shards in ``trainable_weights`` (what optimizers update, one slot per
  shard); checkpoints save the whole variable as one tensor under the layer's attribute (slots
  likewise), so a checkpoint restores into any number of shards, or none.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import variable as variable_mod
from tapeflow.framework.context import eager_scope
from tapeflow.framework.shapes import TensorShape
from tapeflow.framework.variable import Variable


class ShardedVariable:
    """A container of variables read and written as their concatenation along axis 0."""

    __array_priority__ = 100
    _is_sharded_variable = True

    def __init__(self, variables: list, name: str = "ShardedVariable"):
        if not isinstance(variables, (list, tuple)) or not variables or any(
                not isinstance(v, Variable) for v in variables):
            raise TypeError(f"ShardedVariable: `variables` must be a non-empty list of "
                            f"tf.Variable, got {variables!r}")
        if len({v.dtype for v in variables}) > 1:
            raise ValueError(f"ShardedVariable: all shards must have one dtype, got "
                             f"{[v.dtype.name for v in variables]}")
        shapes = [v.shape.as_list() for v in variables]
        if any(not s for s in shapes) or len({tuple(s[1:]) for s in shapes}) > 1:
            raise ValueError(f"ShardedVariable: shards must have rank >= 1 and equal shapes "
                             f"past axis 0, got {shapes}")
        self._variables = list(variables)
        self._name = name
        self._dtype = variables[0].dtype
        self._offsets = np.cumsum([0] + [s[0] for s in shapes]).tolist()
        self._shape = TensorShape([self._offsets[-1]] + shapes[0][1:])

    # --- identity ---------------------------------------------------------------------------
    @property
    def variables(self) -> list:
        """The shards, in row order."""
        return list(self._variables)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def trainable(self) -> bool:
        return self._variables[0].trainable

    def __iter__(self):
        return iter(self._variables)

    def __len__(self) -> int:
        return int(self._shape[0])

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return (f"<tf.distribute.experimental.ShardedVariable '{self._name}' "
                f"shape={self._shape} dtype={self._dtype.name} shards={len(self._variables)}>")

    # --- reading ----------------------------------------------------------------------------
    def _as_tensor(self) -> Any:
        from tapeflow.ops import array_ops

        return array_ops.concat(self._variables, 0)  # the shards themselves: differentiable

    def read_value(self) -> Any:
        return self._as_tensor()

    value = read_value

    def numpy(self) -> np.ndarray:
        return np.concatenate([v.numpy() for v in self._variables], 0)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def _numpy_value(self) -> np.ndarray:
        """The whole value (what a checkpoint saves)."""
        return self.numpy()

    # --- writing ----------------------------------------------------------------------------
    def _blocks(self, value: Any) -> list:
        """`value` (the full shape) cut into the shards' row blocks."""
        from tapeflow.framework.constant import convert_to_tensor

        full = convert_to_tensor(value, dtype=self._dtype)
        if full.shape.is_fully_defined() and full.shape.as_list() != self._shape.as_list():
            raise ValueError(f"ShardedVariable {self._name}: cannot assign a value of shape "
                             f"{full.shape} to a variable of shape {self._shape}")
        o = self._offsets
        return [full[o[i]:o[i + 1]] for i in range(len(self._variables))]

    def assign(self, value: Any, use_locking: Any = None, name: str | None = None,
               read_value: bool = True) -> ShardedVariable:
        for v, block in zip(self._variables, self._blocks(value)):
            v.assign(block)
        return self

    def assign_add(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> ShardedVariable:
        for v, block in zip(self._variables, self._blocks(delta)):
            v.assign_add(block)
        return self

    def assign_sub(self, delta: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> ShardedVariable:
        for v, block in zip(self._variables, self._blocks(delta)):
            v.assign_sub(block)
        return self

    def _split_rows(self, value: np.ndarray) -> list[tuple[Variable, np.ndarray]]:
        """(shard, its rows of `value`): how a whole checkpoint value lands in the shards."""
        o = self._offsets
        return [(v, value[o[i]:o[i + 1]]) for i, v in enumerate(self._variables)]

    # --- lookups ----------------------------------------------------------------------------
    def _embedding_lookup(self, ids: Any) -> Any:
        """Rows `ids`, each gathered from the shard holding it (TF's "div" layout)."""
        from tapeflow.framework.constant import convert_to_tensor
        from tapeflow.ops import array_ops, creation_ops, gather_ops, math_ops, misc_ops

        ids = convert_to_tensor(ids)
        flat = array_ops.reshape(ids, [-1])
        bounds = convert_to_tensor(np.asarray(self._offsets[1:-1], np.int64))
        shard = math_ops.cast(misc_ops.searchsorted(bounds, math_ops.cast(flat, np.int64),
                                                    side="right"), np.int32)
        starts = convert_to_tensor(np.asarray(self._offsets[:-1], flat.dtype._np))
        local = flat - gather_ops.gather(starts, shard)
        n = len(self._variables)
        positions = misc_ops.dynamic_partition(
            creation_ops.range_(array_ops.size(flat)), shard, n)
        rows = [gather_ops.gather(v, part) for v, part in
                zip(self._variables, misc_ops.dynamic_partition(local, shard, n))]
        out = misc_ops.dynamic_stitch(positions, rows)
        return array_ops.reshape(out, array_ops.concat(
            [array_ops.shape(ids), array_ops.shape(out)[1:]], 0))


def _install_operators() -> None:
    """The tensor operators (arithmetic, comparison, indexing) on the concatenated value."""
    from tapeflow.ops import operators

    for name, fn in operators._OPERATORS.items():
        setattr(ShardedVariable, name, fn)
    ShardedVariable.__eq__ = operators._eq
    ShardedVariable.__ne__ = operators._ne
    ShardedVariable.__hash__ = lambda self: id(self)


_install_operators()


# --- creation under a ParameterServerStrategy ------------------------------------------------
_SIGNATURE = inspect.signature(Variable.__init__)


class _Creating(threading.local):
    active = False


_creating = _Creating()


def row_offsets(rows: int, shards: int) -> list[int]:
    """Where each shard starts (and the end): the first ``rows % shards`` get one more row."""
    base, extra = divmod(rows, shards)
    out = [0]
    for i in range(shards):
        out.append(out[-1] + base + (1 if i < extra else 0))
    return out


def create(partitioner: Any, args: tuple, kwargs: dict) -> ShardedVariable | None:
    """The ``ShardedVariable`` that ``Variable(*args, **kwargs)`` makes under `partitioner`,
    or None when it asks for one shard (or the value is a scalar): a plain Variable then."""
    if _creating.active:
        return None
    bound = _SIGNATURE.bind(None, *args, **kwargs).arguments
    bound.pop("self")
    init = bound.pop("initial_value", None)
    if init is None:
        return None
    dtype = bound.get("dtype")
    with eager_scope():
        value = init() if callable(init) else init
        if isinstance(value, (Variable, ShardedVariable)):
            value = value.numpy()
        from tapeflow.framework.constant import convert_to_tensor

        value = convert_to_tensor(value, dtype=dtype)
    if value.shape.rank == 0:
        return None
    parts = partitioner(value.shape, value.dtype)
    if not parts or parts[0] < 1 or any(p != 1 for p in parts[1:]):
        raise ValueError(f"variable_partitioner must return a list whose first element is "
                         f"at least 1 and the others 1, got {parts!r}")
    shards = min(int(parts[0]), int(value.shape[0]))
    if shards <= 1:
        return None
    array = value._value
    name = (bound.get("name") or "Variable").rsplit(":", 1)[0]
    offsets = row_offsets(array.shape[0], shards)
    bound["dtype"] = value.dtype
    bound.pop("shape", None)
    made = []
    _creating.active = True
    try:
        for i in range(shards):
            made.append(Variable(array[offsets[i]:offsets[i + 1]],
                                 **{**bound, "name": f"{name}/part_{i}"}))
    finally:
        _creating.active = False
    return ShardedVariable(made, name=made[0].name.rsplit("/part_0", 1)[0])


def install_creator(creator: Any) -> None:
    if creator not in variable_mod.creators:
        variable_mod.creators.append(creator)
