"""``tf.train.Checkpoint``: save and restore the variables of an object graph.

Restoring loads and validates the whole file before touching any variable: a corrupt file, or a
shape/dtype mismatch, raises and leaves the model exactly as it was. Values for variables that
do not exist yet (layers not built, optimizer slots not created) wait in ``deferred`` and are
applied when the variable is created.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.context import eager_scope
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.train import checkpoint_io, checkpoint_state, deferred, trackable
from tapeflow.train.deferred import PendingSlot, restore_on_create

__all__ = ["Checkpoint", "LoadStatus", "save_weights", "load_weights", "restore_on_create"]


def _list(names: Any, limit: int = 20) -> str:
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


class LoadStatus:
    """What a restore matched (``assert_consumed`` and friends check it)."""

    def __init__(self, path: str | None, matched: set[str], unused: set[str],
                 pending: set[str], missing: set[str]):
        self._path = path
        self._matched = matched
        self._unused = unused
        self._pending = pending
        self._missing = missing
        self._silenced = False

    def _consumed(self, key: str) -> None:
        self._pending.discard(key)
        self._matched.add(key)

    def _describe(self) -> str:
        parts = []
        if self._missing:
            parts.append(f"variables with no value in the checkpoint: {_list(self._missing)}")
        if self._pending:
            parts.append(f"values waiting for variables not created yet (build the model, "
                         f"apply gradients once): {_list(self._pending)}")
        if self._unused:
            parts.append(f"values matching no object: {_list(self._unused)}")
        return "; ".join(parts)

    def assert_consumed(self) -> LoadStatus:
        """Every checkpoint value was used and every variable received one."""
        if self._path is None:
            raise AssertionError("No checkpoint was restored (save_path=None).")
        if self._missing or self._pending or self._unused:
            raise AssertionError(f"Unresolved objects in checkpoint {self._path!r}: "
                                 f"{self._describe()}")
        return self

    def assert_existing_objects_matched(self) -> LoadStatus:
        """Every variable that exists now received a value (extra values are allowed)."""
        if self._path is None:
            raise AssertionError("No checkpoint was restored (save_path=None).")
        if self._missing:
            raise AssertionError(f"Checkpoint {self._path!r} has no value for existing "
                                 f"variables: {_list(self._missing)}")
        return self

    def assert_nontrivial_match(self) -> LoadStatus:
        """At least one variable was restored."""
        if not self._matched:
            raise AssertionError(f"Nothing was restored from checkpoint {self._path!r}: "
                                 f"{self._describe()}")
        return self

    def expect_partial(self) -> LoadStatus:
        """Silence the warning about values left unused when this status is discarded."""
        self._silenced = True
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Values are assigned eagerly at restore time; kept for TF1-style code."""

    initialize_or_restore = run_restore_ops

    def __del__(self) -> None:
        # values still waiting for their variables may yet be used: only unmatched ones warn
        if not self._silenced and self._path is not None and self._unused:
            warnings.warn(f"Checkpoint {self._path!r} was only partly used: {self._describe()}. "
                          f"Call expect_partial() on the restore status to silence this.",
                          stacklevel=1)


def _validate(key: str, var: Variable, value: np.ndarray) -> str | None:
    shape = tuple(var.shape.as_tuple())
    if value.shape != shape or value.dtype != var.dtype._np:
        return (f"{key} (checkpoint {_dtypes.from_numpy(value.dtype).name}"
                f"{list(value.shape)} vs variable {var.dtype.name}{list(shape)})")
    return None


def _defer_unmatched(graph: trackable.ObjectGraph, tensors: dict[str, np.ndarray],
                     unmatched: set[str], status: LoadStatus) -> set[str]:
    """Register deferred restorations for values whose objects exist but variables do not."""
    waiting: dict[str, deferred.Pending] = {}
    deferred_keys: set[str] = set()
    for key in sorted(k for k in unmatched if trackable.SLOT_MARKER not in k):
        parent, name = trackable.split_key(key)
        owner = graph.objects.get(parent)
        if owner is not None and not isinstance(owner, (list, tuple, dict)):
            waiting[key] = deferred.defer(owner, name, tensors[key], key, status)
            deferred_keys.add(key)
    for key in sorted(k for k in unmatched if trackable.SLOT_MARKER in k):
        var_path, opt_path, slot_name = trackable.split_slot_key(key)
        optimizer = graph.objects.get(opt_path)
        if optimizer is None:
            continue
        var = graph.variables.get(var_path)
        if var is not None:
            deferred.defer_slot(optimizer, var, slot_name, tensors[key], key, status)
            deferred_keys.add(key)
        elif var_path in waiting:
            waiting[var_path].slots.append(PendingSlot(optimizer, slot_name, tensors[key], key))
            deferred_keys.add(key)
    return deferred_keys


def restore_into(root: Any, save_path: str, strict: bool = False, exclude: Any = None
                 ) -> LoadStatus:
    """Load `save_path`, validate everything, then assign; defer values for future variables.

    `strict` (``load_weights``) also refuses values that match nothing and variables that get
    no value.
    """
    tensors = checkpoint_io.read_tensors(save_path)
    graph = trackable.walk(root, exclude)
    targets = graph.all_variables()
    mismatched, plan = [], []
    for key, var in targets.items():
        if key in tensors:
            problem = _validate(key, var, tensors[key])
            if problem:
                mismatched.append(problem)
            else:
                plan.append((var, tensors[key]))
    missing = {k for k, v in targets.items() if k not in tensors and v.dtype is not
               _dtypes.string}
    unmatched = set(tensors) - set(targets)
    status = LoadStatus(save_path, {k for k in targets if k in tensors}, set(), set(), missing)
    if mismatched or (strict and missing):
        status._silenced = True
        raise errors.InvalidArgumentError(
            None, "restore",
            f"Cannot restore {save_path!r}: nothing was changed.\n"
            f"  mismatched: {_list(mismatched) or '-'}\n"
            f"  missing (no value in the checkpoint): {_list(missing) or '-'}\n"
            f"  unexpected (in the checkpoint, matching nothing): {_list(unmatched) or '-'}\n"
            f"{errors.user_line()}")
    deferred_keys = _defer_unmatched(graph, tensors, unmatched, status) if unmatched else set()
    status._unused = unmatched - deferred_keys
    status._pending = deferred_keys
    if strict and status._unused:
        status._silenced = True
        raise errors.InvalidArgumentError(
            None, "restore",
            f"Cannot restore {save_path!r}: nothing was changed.\n"
            f"  unexpected (in the checkpoint, matching nothing): {_list(status._unused)}\n"
            f"{errors.user_line()}")
    with eager_scope():
        for var, value in plan:
            var.assign(value)
    return status


def save_object(root: Any, prefix: str, exclude: Any = None) -> str:
    """Write every variable reachable from `root` to `prefix` (atomically); returns the path."""
    graph = trackable.walk(root, exclude)
    tensors = {k: _saved_value(v) for k, v in graph.all_variables().items()
               if v.dtype is not _dtypes.string}
    tensors = {k: v for k, v in tensors.items() if v is not None}
    checkpoint_io.write_tensors(prefix, tensors)
    return prefix


def _saved_value(var: Any) -> np.ndarray | None:
    """A variable's value to save (a ShardedVariable's whole value); None if uninitialized."""
    if getattr(var, "_is_sharded_variable", False):
        return var.numpy()
    return None if var._value is None else np.array(var._value)


def _check_dependency(name: str, value: Any) -> None:
    if isinstance(value, (Tensor, np.ndarray, np.generic, int, float, complex, str, bytes)):
        raise ValueError(f"tf.train.Checkpoint: `{name}` is a {type(value).__name__}, which has "
                         f"no state to save; wrap a value in a tf.Variable to checkpoint it.\n"
                         f"{errors.user_line()}")


class Checkpoint:
    """Groups objects (model, optimizer, variables ...) to save and restore together.

    ``ckpt = tf.train.Checkpoint(model=model, optimizer=opt)``; ``path = ckpt.save(prefix)``
    gives ``prefix-1``, ``prefix-2`` ...; ``ckpt.restore(path).assert_consumed()``.
    """

    def __init__(self, root: Any = None, **kwargs: Any):
        object.__setattr__(self, "_deps", {})
        object.__setattr__(self, "_save_counter", None)
        if root is not None:
            _check_dependency("root", root)
            self._deps["root"] = root
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        _check_dependency(name, value)
        self._deps[name] = value
        if isinstance(value, Variable):
            restore_on_create(self, name, value)

    def __getattr__(self, name: str) -> Any:
        deps = self.__dict__.get("_deps", {})
        if name in deps:
            return deps[name]
        raise AttributeError(f"'Checkpoint' object has no attribute {name!r}")

    @property
    def save_counter(self) -> Variable:
        """Number of ``save`` calls (an int64 Variable, saved with the checkpoint)."""
        if self._save_counter is None:
            with eager_scope():
                self._save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
        return self._save_counter

    def _checkpoint_dependencies(self) -> list[tuple[str, Any]]:
        return [*self._deps.items(), ("save_counter", self.save_counter)]

    def write(self, file_prefix: str, options: Any = None) -> str:
        """Save to exactly `file_prefix` (no counter, no index update); returns it."""
        return save_object(self, str(file_prefix))

    def save(self, file_prefix: str, options: Any = None) -> str:
        """Save to ``{file_prefix}-{n}`` (n counts saves) and mark it the directory's latest."""
        with eager_scope():
            self.save_counter.assign_add(np.int64(1))
        path = f"{file_prefix}-{int(self.save_counter.numpy())}"
        save_object(self, path)
        checkpoint_state.record_save(path)
        return path

    def read(self, save_path: str, options: Any = None) -> LoadStatus:
        """Restore from `save_path` (as written by ``write`` or ``save``)."""
        return restore_into(self, str(save_path))

    def restore(self, save_path: str | None, options: Any = None) -> LoadStatus:
        """Restore from `save_path`; None (no checkpoint yet) restores nothing."""
        if save_path is None:
            return LoadStatus(None, set(), set(), set(), set())
        return restore_into(self, str(save_path))


def _is_optimizer(obj: Any) -> bool:
    return hasattr(obj, "_checkpoint_slots")


def save_weights(model: Any, filepath: str) -> str:
    """``model.save_weights``: the model's variables (not its optimizer's) to `filepath`."""
    save_object(model, str(filepath), exclude=_is_optimizer)
    checkpoint_state.record_save(str(filepath))
    return str(filepath)


def load_weights(model: Any, filepath: str) -> LoadStatus:
    """``model.load_weights``: strict; errors list missing, unexpected and mismatched names.

    Values for layers that are not built yet are applied when they are built.
    """
    return restore_into(model, str(filepath), strict=True, exclude=_is_optimizer)
