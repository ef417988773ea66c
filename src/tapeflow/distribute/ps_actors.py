"""The two kinds of Ray actor a ``ParameterServerStrategy`` starts.

``ParameterServerShard`` holds its share of the variables (whole variables, or shards of
``ShardedVariable`` objects) and an optimizer built from the user's optimizer config. It applies
each pushed gradient as it arrives (Downpour SGD) and counts versions: the staleness of a push is
how many updates other workers applied to the shard between the pull the gradient was computed
from and the push.

``Worker`` receives each scheduled function once (pickled by Ray with the model it closes over),
and for every call pulls the latest variable values from the shards, runs the function with
``optimizer.apply_gradients`` staging the gradients instead of applying them, and pushes them.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from tapeflow.distribute import strategy as strategy_mod
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import nest
from tapeflow.framework.dispatch import apply, op


class ParameterServerShard:
    """One parameter server: variables (or slices), their optimizer, update versions."""

    def __init__(self, index: int):
        self._index = index
        self._optimizer = None
        self._vars: dict[str, Any] = {}
        self._version = 0
        self._staleness: list[int] = []
        self._lock = threading.Lock()

    def pid(self) -> int:
        return os.getpid()

    def init(self, values: dict[str, np.ndarray], optimizer: dict | None = None,
             slots: dict[str, dict[str, np.ndarray]] | None = None, iterations: int = 0) -> int:
        """(Re)set the shard's variables and, when the coordinator knows the optimizer, its
        slots and step count (a new job, or a resume from a checkpoint)."""
        from tapeflow.framework.variable import Variable

        with self._lock:
            self._vars = {k: Variable(v, name=f"ps{self._index}/{k}") for k, v in values.items()}
            self._optimizer = None
            self._version = 0
            self._staleness = []
            if optimizer is not None:
                self._make_optimizer(optimizer)
                for key, named in (slots or {}).items():
                    for name, value in named.items():
                        self._optimizer.add_slot(self._vars[key], name).assign(value)
                self._optimizer.iterations = int(iterations)
        return len(self._vars)

    def _make_optimizer(self, spec: tuple) -> None:
        cls, config = spec  # the user's class itself (a legacy one keeps its sparse rules)
        self._optimizer = cls.from_config(config)

    def optimizer_state(self, keys: list[str]) -> tuple[dict[str, dict[str, np.ndarray]], int]:
        """The slots of the variables `keys` and the step count (for a checkpoint)."""
        with self._lock:
            opt = self._optimizer
            if opt is None:
                return {}, 0
            out = {}
            for key in keys:
                entry = opt._slots.get(self._vars[key]._unique_id) if key in self._vars else None
                if entry is not None:
                    out[key] = {name: slot._value.copy() for name, slot in entry[1].items()}
            return out, int(opt.iterations._value)

    def pull(self, keys: list[str]) -> tuple[dict[str, np.ndarray], int]:
        with self._lock:
            return {k: self._vars[k]._value for k in keys}, self._version

    def push(self, grads: dict[str, Any], deltas: dict[str, np.ndarray],
             seen_version: int, optimizer: tuple | None) -> int:
        """Apply one worker's gradients now (with a copy of the worker's optimizer, made at
        the first push) and add its changes to non-trainable variables (batch-norm moving
        statistics); returns the staleness of the gradients. A gradient is an array, or
        (values, indices): the rows an embedding lookup touched, applied with the
        optimizer's sparse rule as TensorFlow's servers do."""
        from tapeflow.framework.tensor import wrap
        from tapeflow.ops.indexed_slices import IndexedSlices

        with self._lock:
            for k, d in deltas.items():
                var = self._vars[k]
                var._value = var._value + np.asarray(d, var._value.dtype)
            if not grads:
                return -1
            if self._optimizer is None:
                if optimizer is None:
                    raise RuntimeError(f"ps:{self._index}: gradients came without an optimizer")
                self._make_optimizer(optimizer)
            pairs = []
            for k, g in grads.items():
                var = self._vars[k]
                if isinstance(g, tuple):
                    g = IndexedSlices(wrap(np.asarray(g[0], var._value.dtype)), wrap(g[1]),
                                      wrap(np.asarray(var._value.shape, g[1].dtype)))
                else:
                    g = wrap(np.asarray(g, var._value.dtype))
                pairs.append((g, var))
            self._optimizer.apply_gradients(pairs)
            stale = self._version - seen_version
            self._staleness.append(stale)
            self._version += 1
            return stale

    def staleness(self) -> list[int]:
        with self._lock:
            return list(self._staleness)


@op("ParameterServerPush", stateful=True, shape=lambda *specs, **attrs: ((), _dtypes.int64))
def _stage_gradients(*arrays, keys, sparse, sink):
    """Hand the gradients to the worker, which pushes them to their shards after the step;
    a sparse one comes as two arrays (values, indices)."""
    it = iter(arrays)
    for key, rows in zip(keys, sparse):
        sink.grads.append((key, (next(it), next(it)) if rows else next(it)))
    return np.asarray(len(keys), np.int64)


_CLIPPING = ("clipnorm", "clipvalue", "global_clipnorm")


def optimizer_spec(optimizer: Any) -> tuple:
    """What a server rebuilds `optimizer` from: its class and its config, without clipping:
    a worker clips a step's gradients before pushing them (``global_clipnorm`` is a norm over
    every variable of the step, whichever servers they live on), as TensorFlow's workers do."""
    config = dict(optimizer.get_config())
    for key in _CLIPPING:
        if key in config:
            config[key] = None
    return type(optimizer), config


def clip_on_worker(grads: list, optimizer: Any) -> list:
    """The optimizer's clipping (value, norm, then global norm over all `grads`), on the
    worker before the gradients are split between the servers, so that ``global_clipnorm``
    clips by the norm of the whole step, as in TensorFlow (tf-keras clips in
    ``apply_gradients`` on the worker, then the updates run on the servers)."""
    from tapeflow.keras.optimizers import clipping

    settings = [getattr(optimizer, key, None) for key in _CLIPPING]
    if optimizer is None or all(x is None for x in settings):
        return grads
    clipnorm, clipvalue, global_clipnorm = settings
    return clipping.clip_gradients(list(grads), clipnorm, global_clipnorm, clipvalue)


class _Staged:
    """A worker's gradients of one step, and the optimizer config the servers apply them with."""

    def __init__(self) -> None:
        self.grads: list = []
        self.optimizer: tuple | None = None


class _WorkerReplicaContext(strategy_mod.ReplicaContext):
    keeps_slices = True  # an embedding's IndexedSlices gradient goes to its server as rows

    def __init__(self, owner: Any, replica_id: int, sink: list):
        super().__init__(owner, replica_id)
        self._sink = sink

    def _aggregate_gradients(self, grads: list, variables: list | None = None,
                             optimizer: Any = None) -> list | None:
        if variables is None:
            return grads
        if optimizer is not None and self._sink.optimizer is None:
            self._sink.optimizer = optimizer_spec(optimizer)
        keys = []
        for v in variables:
            key = getattr(v, "_ps_key", None)
            if key is None:
                raise ValueError(f"ParameterServerStrategy: variable {v.name} has no home on "
                                 f"a parameter server: create trainable variables under "
                                 f"strategy.scope()")
            keys.append(key)
        from tapeflow.ops.indexed_slices import IndexedSlices

        arrays, sparse = [], []
        for g in clip_on_worker(grads, optimizer):
            rows = type(g) is IndexedSlices
            arrays.extend((g.values, g.indices) if rows else (g,))
            sparse.append(rows)
        apply(_stage_gradients, *arrays, keys=tuple(keys), sparse=tuple(sparse), sink=self._sink)
        return None


_current_worker: list[tuple[int, int]] = []


class Worker:
    """A worker task: runs scheduled functions against the parameter servers."""

    def __init__(self, index: int, num_workers: int, shards: list):
        self._index = index
        self._num = num_workers
        self._shards = shards
        self._home: dict[str, int] = {}  # variable key -> its parameter server
        self._fns: dict[int, tuple] = {}
        self._datasets: dict[int, Any] = {}
        self._iterators: dict[int, Any] = {}
        self._sink = _Staged()
        self._state_keys: set = set()  # non-trainable variables: their changes are pushed
        _current_worker[:] = [(index, num_workers)]

    def pid(self) -> int:
        return os.getpid()

    def ping(self) -> int:
        return self._index

    def has(self, fn_id: int) -> bool:
        return fn_id in self._fns

    def load(self, fn_id: int, payload: bytes) -> None:
        """A scheduled function, pickled once by the coordinator with the variables it uses
        (the same objects inside it: the worker's copies of them)."""
        from ray import cloudpickle

        fn, traced, variables, keys, home, state_keys = cloudpickle.loads(payload)
        self._home.update(home)
        self._state_keys = set(state_keys)
        for v, key in zip(variables, keys):  # the copies of the variables `fn` closes over
            v._ps_key = key
        if traced:
            from tapeflow.graph.function import function

            fn = function(fn)
        self._fns[fn_id] = (fn, dict(zip(keys, variables)))

    def make_dataset(self, ds_id: int, dataset_fn: Any) -> None:
        self._datasets[ds_id] = dataset_fn()
        self._iterators.pop(ds_id, None)

    def run(self, fn_id: int, args: tuple, kwargs: dict) -> Any:
        fn, variables = self._fns[fn_id]
        versions = self._pull(variables)
        before = {k: np.array(variables[k]._value) for k in self._state_keys if k in variables}
        args, kwargs = nest.map_structure(self._resolve, (args, kwargs))
        self._sink.grads.clear()
        stack = strategy_mod._stack
        stack.replica.append(_WorkerReplicaContext(strategy_mod.get_strategy(), self._index,
                                                   self._sink))
        try:
            out = fn(*args, **kwargs)
        finally:
            stack.replica.pop()
        deltas = {k: variables[k]._value - v for k, v in before.items()}
        deltas = {k: d for k, d in deltas.items() if np.any(d)}
        stale = self._push(versions, deltas)
        return nest.map_structure(_to_numpy, out), stale

    def _resolve(self, value: Any) -> Any:
        ds_id = getattr(value, "_per_worker_iterator", None)
        if ds_id is None:
            return value
        if ds_id not in self._iterators:
            self._iterators[ds_id] = iter(self._datasets[ds_id])
        return _IteratorProxy(self._iterators[ds_id])

    def _pull(self, variables: dict) -> dict[int, int]:
        import ray

        by_ps: dict[int, list[str]] = {}
        for key in variables:
            by_ps.setdefault(self._home[key], []).append(key)
        refs = {ps: self._shards[ps].pull.remote(keys) for ps, keys in by_ps.items()}
        got = {ps: ray.get(r) for ps, r in refs.items()}
        for key, var in variables.items():
            var._value = got[self._home[key]][0][key]
        return {ps: version for ps, (_, version) in got.items()}

    def _push(self, versions: dict[int, int], deltas: dict[str, np.ndarray]) -> list[int]:
        import ray

        per_ps: dict[int, tuple[dict, dict]] = {}
        for key, grad in self._sink.grads:
            grad = tuple(map(_to_numpy, grad)) if isinstance(grad, tuple) else _to_numpy(grad)
            per_ps.setdefault(self._home[key], ({}, {}))[0][key] = grad
        for key, delta in deltas.items():
            per_ps.setdefault(self._home[key], ({}, {}))[1][key] = delta
        self._sink.grads.clear()
        config = self._sink.optimizer
        refs = [self._shards[ps].push.remote(g, d, versions.get(ps, 0), config)
                for ps, (g, d) in per_ps.items()]
        return [s for s in ray.get(refs) if s >= 0]


class _IteratorProxy:
    """What a step function's `iterator` argument is on a worker: ``next`` raises TF's
    OutOfRangeError when this worker's dataset is exhausted."""

    def __init__(self, it: Any):
        self._it = it

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        from tapeflow.framework import errors

        try:
            return next(self._it)
        except StopIteration:
            raise errors.OutOfRangeError(None, "IteratorGetNext",
                                         "End of sequence: this worker's dataset is "
                                         "exhausted") from None

    def get_next(self) -> Any:
        return next(self)


def _to_numpy(value: Any) -> Any:
    return np.asarray(value._value) if hasattr(value, "_value") else value


def current_worker() -> tuple[int, int] | None:
    """(index, number of workers) inside a worker actor, else None."""
    return _current_worker[0] if _current_worker else None
