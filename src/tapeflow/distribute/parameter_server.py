"""``tf.distribute.experimental.ParameterServerStrategy`` and ``ClusterCoordinator`` on Ray.

The process that builds the strategy is the coordinator (TF's "chief"). From the cluster spec
(a ``SimpleClusterResolver`` or ``TF_CONFIG``) it starts one Ray actor per "ps" task and per
"worker" task (``ps_actors``) on the running Ray cluster (``ray.init()``: a local one, or the
one ``ray start`` made when ``RAY_ADDRESS`` is set); the script starts no servers.

Trainable variables created under ``scope()`` get a home on the parameter servers, round-robin;
with a ``variable_partitioner`` a variable it splits is a ``ShardedVariable`` whose shards
(row blocks) are spread over the servers.
``coordinator.schedule(fn)`` queues a call; one dispatcher thread per worker sends calls to its
worker as it frees up (asynchronous training: workers never wait for each other). A worker pulls
the latest values, runs `fn`, and pushes the gradients its ``apply_gradients`` produced; each
server applies them as they arrive (Downpour SGD).

Failures: Ray restarts a dead worker actor; its calls in flight go back to the queue and run on
another worker, and the worker rejoins once restarted (functions and datasets are sent again). A
dead parameter server loses state that exists nowhere else: the coordinator raises an
``UnavailableError`` naming it, and training resumes from a checkpoint with a new strategy.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.distribute import closure_scan, ps_actors, sharded_variable, strategy
from tapeflow.distribute.cluster_resolver import ClusterResolver, TFConfigClusterResolver
from tapeflow.framework import errors, nest
from tapeflow.framework import variable as variable_mod
from tapeflow.framework.tensor import wrap


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ImportError("ParameterServerStrategy runs on Ray: pip install 'tapeflow[ray]'") \
            from e
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(2, os.cpu_count() or 2), include_dashboard=False,
                     log_to_driver=False, object_store_memory=128 << 20,
                     runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH",
                                                                            "")}})
    return ray


class ParameterServerStrategy(strategy.Strategy):
    """Asynchronous training: variables on parameter servers, steps on workers."""

    def __init__(self, cluster_resolver: ClusterResolver | None = None,
                 variable_partitioner: Callable | None = None):
        super().__init__()
        self._resolver = cluster_resolver if cluster_resolver is not None else \
            TFConfigClusterResolver()
        spec = self._resolver.cluster_spec()
        self._num_ps = spec.num_tasks("ps")
        self._num_workers = spec.num_tasks("worker")
        if self._num_ps < 1 or self._num_workers < 1:
            raise ValueError(f"ParameterServerStrategy: the cluster needs at least one 'ps' "
                             f"and one 'worker' task, got {spec.as_dict()}")
        self._partitioner = variable_partitioner
        self._variables: list = []
        self._non_trainable: list = []
        self._state_keys: set = set()
        self._home: dict[str, int] = {}  # variable (or shard) key -> its parameter server
        self._sharded: list = []  # the ShardedVariables made under the scope
        self._next_ps = 0
        self._names = collections.Counter()
        self._shards: list = []
        self._coordinator: Any = None  # the ClusterCoordinator, once made (fit makes one)
        if ps_actors.current_worker() is None:
            _track_variables()

    def __getstate__(self) -> dict:
        """What a worker gets: the layout and the servers, not the coordinator's lists."""
        state = dict(self.__dict__)
        state["_variables"] = []
        state["_non_trainable"] = []
        state["_sharded"] = []
        state["_coordinator"] = None
        return state

    @property
    def num_replicas_in_sync(self) -> int:
        return 1

    @property
    def cluster_resolver(self) -> ClusterResolver:
        return self._resolver

    @property
    def variable_layout(self) -> dict[str, list[tuple[int, int, int]]]:
        """Where each variable lives: {name: [(ps index, first row, end row)]}, one entry
        per shard of a ShardedVariable, one for a whole variable."""
        out, in_sharded = {}, set()
        for sv in self._sharded:
            offsets = sv._offsets
            out[sv.name] = [(self._home[v._ps_key], offsets[i], offsets[i + 1])
                            for i, v in enumerate(sv.variables) if hasattr(v, "_ps_key")]
            in_sharded.update(id(v) for v in sv.variables)
        for var in self._variables:
            if id(var) not in in_sharded:
                rows = var._value.shape[0] if var._value.ndim else 1
                out[var._ps_key] = [(self._home[var._ps_key], 0, rows)]
        return out

    # --- variables ------------------------------------------------------------------------
    def _on_variable_created(self, var: Any) -> None:
        if var.trainable:
            self._place(var)
        else:  # placed when a scheduled function shows it is a layer's state (_adopt_state)
            self._non_trainable.append(var)

    def _make_sharded(self, args: tuple, kwargs: dict) -> Any:
        """A ShardedVariable for ``Variable(*args, **kwargs)`` if the partitioner splits it
        (its shards, created inside, are placed one by one), else None."""
        if self._partitioner is None:
            return None
        made = sharded_variable.create(self._partitioner, args, kwargs)
        if made is not None:
            self._sharded.append(made)
        return made

    def _place(self, var: Any) -> None:
        """Give `var` (a whole variable or one shard) a home on the next server."""
        base = var.name[:-2] if var.name.endswith(":0") else var.name
        self._names[base] += 1
        key = base if self._names[base] == 1 else f"{base}_{self._names[base] - 1}"
        var._ps_key = key
        self._home[key] = self._next_ps % self._num_ps
        self._next_ps += 1
        self._variables.append(var)

    def _adopt_state(self, owners: list) -> None:
        """Non-trainable variables of the layers in `owners` (batch-norm moving statistics)
        made under the scope move to the servers too; workers push their changes."""
        wanted = {id(v) for layer in owners for v in layer.non_trainable_weights}
        for var in [v for v in self._non_trainable if id(v) in wanted]:
            self._non_trainable.remove(var)
            self._place(var)
            self._state_keys.add(var._ps_key)

    # --- replica side ------------------------------------------------------------------------
    def run(self, fn: Callable, args: tuple = (), kwargs: dict | None = None,
            options: Any = None) -> Any:
        """On a worker: `fn` with gradients going to the servers; elsewhere: `fn` as is."""
        strategy._stack.strategies.append(self)
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            strategy._stack.strategies.pop()

    def distribute_datasets_from_function(self, dataset_fn: Callable,
                                          options: Any = None) -> Any:
        worker = ps_actors.current_worker()
        index, n = worker if worker is not None else (0, 1)
        return dataset_fn(strategy.InputContext(n, index, 1))

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        return dataset


def _creation_hook(var: Any) -> None:
    current = strategy.get_strategy()
    if isinstance(current, ParameterServerStrategy):
        current._on_variable_created(var)


def _sharding_creator(args: tuple, kwargs: dict) -> Any:
    current = strategy.get_strategy()
    if isinstance(current, ParameterServerStrategy):
        return current._make_sharded(args, kwargs)
    return None


def _track_variables() -> None:
    if _creation_hook not in variable_mod.creation_hooks:
        variable_mod.creation_hooks.append(_creation_hook)
    sharded_variable.install_creator(_sharding_creator)


class RemoteValue:
    """The result of a scheduled function, available once a worker has run it."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def _set(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value, self._error = value, error
        self._done.set()

    def fetch(self) -> Any:
        """The value as NumPy (blocks until it is ready; raises the function's error)."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def get(self) -> Any:
        """The value as tensors."""
        return nest.map_structure(lambda v: wrap(np.asarray(v)) if isinstance(
            v, (np.ndarray, np.generic)) else v, self.fetch())


class PerWorkerDataset:
    """``coordinator.create_per_worker_dataset``: each worker builds its own from the
    function; iterating gives the per-worker iterator to pass to scheduled functions."""

    def __init__(self, coordinator: ClusterCoordinator, ds_id: int):
        self._coordinator = coordinator
        self._per_worker_iterator = None
        self._id = ds_id

    def __iter__(self) -> PerWorkerIterator:
        return PerWorkerIterator(self._id)


class PerWorkerIterator:
    """Stands for "this worker's iterator" in a scheduled function's arguments."""

    def __init__(self, ds_id: int):
        self._per_worker_iterator = ds_id

    def __iter__(self) -> PerWorkerIterator:
        return self

    def __next__(self) -> Any:
        raise TypeError("a per-worker iterator is read on the workers: pass it to a function "
                        "given to coordinator.schedule and call next() there")


class _Closure:
    def __init__(self, fn_id: int, args: tuple, kwargs: dict, value: RemoteValue):
        self.fn_id, self.args, self.kwargs, self.value = fn_id, args, kwargs, value
        self.attempts = 0


class ClusterCoordinator:
    """Schedules functions on the workers of a ``ParameterServerStrategy``."""

    def __init__(self, strategy: ParameterServerStrategy):
        self._strategy = strategy
        strategy._coordinator = self
        self._ray = ray = _ray()
        shard_cls = ray.remote(num_cpus=0, max_restarts=0)(ps_actors.ParameterServerShard)
        worker_cls = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)(
            ps_actors.Worker)
        strategy._shards = [shard_cls.remote(i) for i in range(strategy._num_ps)]
        self._shards = strategy._shards
        self._workers = [worker_cls.remote(i, strategy._num_workers, self._shards)
                         for i in range(strategy._num_workers)]
        ray.get([w.ping.remote() for w in self._workers])
        self._fns: dict[int, Any] = {}
        self._fn_ids: dict[int, int] = {}
        self._datasets: dict[int, Any] = {}
        self._ids = itertools.count(1)
        self._queue: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._in_flight = 0
        self._error: BaseException | None = None
        self._initialized = False
        self._optimizer: Any = None  # the coordinator's optimizer: mirrors the servers' state
        self._closed = False
        self.worker_restarts = [0] * len(self._workers)
        self.retried_calls = 0  # calls that a dead worker had and another one ran
        self.calls_per_worker = [0] * len(self._workers)
        self._threads = [threading.Thread(target=self._dispatch, args=(i,), daemon=True,
                                          name=f"tapeflow-ps-worker-{i}")
                         for i in range(len(self._workers))]
        for t in self._threads:
            t.start()

    @property
    def strategy(self) -> ParameterServerStrategy:
        return self._strategy

    # --- the public API -----------------------------------------------------------------------
    def schedule(self, fn: Callable, args: tuple = (), kwargs: dict | None = None
                 ) -> RemoteValue:
        """Queue `fn(*args, **kwargs)` for some worker; returns its RemoteValue at once."""
        self._raise_error()
        fn_id = self._fn_ids.get(id(fn))
        if fn_id is None:
            fn_id = self._register(fn)
        value = RemoteValue()
        with self._cv:
            self._queue.append(_Closure(fn_id, args, kwargs or {}, value))
            self._cv.notify_all()
        return value

    def _register(self, fn: Callable) -> int:
        """First sight of `fn`: find its optimizer and layers (their state lives on the
        servers too), set the servers up if this is the first function, and keep what a
        worker needs to run it."""
        optimizers, layers = closure_scan.optimizers_and_layers(fn)
        if not self._initialized:
            self._strategy._adopt_state(layers)
            self._optimizer = optimizers[0] if optimizers else None
            self._ensure_initialized()
        fn_id = self._fn_ids[id(fn)] = next(self._ids)
        traced = hasattr(fn, "python_function")  # a tf.function is traced again there
        variables = list(self._strategy._variables)  # pickled with fn: shared objects
        from ray import cloudpickle

        self._fns[fn_id] = cloudpickle.dumps((
            getattr(fn, "python_function", fn), traced, variables,
            [v._ps_key for v in variables], dict(self._strategy._home),
            set(self._strategy._state_keys)))
        return fn_id

    def join(self) -> None:
        """Wait until every scheduled function has run; raise the first error; then give the
        coordinator's variables the servers' values (so a checkpoint saves them)."""
        with self._cv:
            while (self._queue or self._in_flight) and self._error is None:
                self._cv.wait(0.1)
        self._raise_error()
        self._pull_to_coordinator()

    def done(self) -> bool:
        with self._cv:
            return not self._queue and not self._in_flight

    def fetch(self, values: Any) -> Any:
        return nest.map_structure(lambda v: v.fetch() if isinstance(v, RemoteValue) else v,
                                  values)

    def create_per_worker_dataset(self, dataset_fn: Callable) -> PerWorkerDataset:
        """Each worker calls `dataset_fn` (with an InputContext saying which worker it is)."""
        ds_id = next(self._ids)
        dataset_fn = getattr(dataset_fn, "python_function", dataset_fn)
        self._datasets[ds_id] = dataset_fn
        self._ray.get([w.make_dataset.remote(ds_id, dataset_fn) for w in self._workers])
        return PerWorkerDataset(self, ds_id)

    def staleness(self) -> dict[str, Any]:
        """How many updates behind each applied gradient was, over all servers."""
        per_ps = self._ray.get([s.staleness.remote() for s in self._shards])
        flat = np.array([x for part in per_ps for x in part], np.int64)
        if not flat.size:
            return {"updates": 0}
        return {"updates": int(flat.size), "mean": float(flat.mean()), "max": int(flat.max()),
                "histogram": {int(k): int(c) for k, c in zip(*np.unique(flat,
                                                                        return_counts=True))}}

    def worker_pids(self) -> list[int]:
        return self._ray.get([w.pid.remote() for w in self._workers])

    def ps_pids(self) -> list[int]:
        return self._ray.get([s.pid.remote() for s in self._shards])

    def shutdown(self) -> None:
        """Stop the dispatchers and the actors (the Ray cluster keeps running)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        for actor in self._workers + self._shards:
            self._ray.kill(actor)

    # --- internals ----------------------------------------------------------------------------
    def _ensure_initialized(self) -> None:
        """Send the variables (and the optimizer's slots and step count, restored from a
        checkpoint or fresh) to the servers."""
        if self._initialized:
            return
        values: list[dict[str, np.ndarray]] = [{} for _ in self._shards]
        slots: list[dict[str, dict[str, np.ndarray]]] = [{} for _ in self._shards]
        opt, config, iterations = self._optimizer, None, 0
        if opt is not None:

            config, iterations = ps_actors.optimizer_spec(opt), int(opt.iterations._value)
        home = self._strategy._home
        for var in self._strategy._variables:
            ps, key = home[var._ps_key], var._ps_key
            values[ps][key] = var._value
            if opt is not None and var.trainable and opt._active_slots():
                for name, slot in opt._create_slots(var).items():
                    slots[ps].setdefault(key, {})[name] = slot._value
        self._ray.get([s.init.remote(v, config, sl, iterations)
                       for s, v, sl in zip(self._shards, values, slots)])
        self._initialized = True

    def _pull_to_coordinator(self) -> None:
        """The servers' values into the coordinator's variables, and their optimizer slots
        and step count into the coordinator's optimizer (what a checkpoint saves)."""
        if not self._initialized:
            return
        home = self._strategy._home
        keys: list[list[str]] = [[] for _ in self._shards]
        for var in self._strategy._variables:
            keys[home[var._ps_key]].append(var._ps_key)
        try:
            got = self._ray.get([s.pull.remote(k) for s, k in zip(self._shards, keys)])
            state = self._ray.get([s.optimizer_state.remote(k)
                                   for s, k in zip(self._shards, keys)]) \
                if self._optimizer is not None else None
        except Exception as e:
            raise self._ps_error(e) from None
        for var in self._strategy._variables:
            ps, key = home[var._ps_key], var._ps_key
            var._value = got[ps][0][key]
            if state is None or not var.trainable:
                continue
            for name, value in state[ps][0].get(key, {}).items():
                self._optimizer.add_slot(var, name).assign(value)
        if state is not None:
            self._optimizer.iterations = max(it for _, it in state)

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def _take(self) -> _Closure | None:
        with self._cv:
            while not self._queue and not self._closed:
                self._cv.wait(0.5)
            if self._closed:
                return None
            self._in_flight += 1
            return self._queue.popleft()

    def _finish(self, closure: _Closure | None = None, requeue: bool = False) -> None:
        with self._cv:
            self._in_flight -= 1
            if requeue and closure is not None:
                self._queue.appendleft(closure)
            self._cv.notify_all()

    def _dispatch(self, index: int) -> None:
        """One worker's loop: send it calls; on its death requeue and wait for its restart."""
        ray = self._ray
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

        worker_gone = (ActorDiedError, ActorUnavailableError)
        sent: set = set()
        while True:
            closure = self._take()
            if closure is None:
                return
            worker = self._workers[index]
            try:
                for fn_id in [closure.fn_id]:
                    if fn_id not in sent:
                        ray.get(worker.load.remote(fn_id, self._fns[fn_id]))
                        sent.add(fn_id)
                out, stale = ray.get(worker.run.remote(closure.fn_id, closure.args,
                                                       closure.kwargs))
                closure.value._set(out)
                self.calls_per_worker[index] += 1
                self._finish()
            except worker_gone + (RayActorError,) as e:
                if self._ps_dead():
                    self._fail(closure, self._ps_error(e))
                    return
                closure.attempts += 1
                self.retried_calls += 1
                self._finish(closure, requeue=True)  # another worker runs it
                sent = self._wait_for_restart(index)
            except Exception as e:  # the function's own error, or a parameter server's death
                self._fail(closure, self._ps_error(e) if self._ps_dead() else _cause(e))
                if self._error is not None:
                    return

    def _wait_for_restart(self, index: int) -> set:
        """Wait for Ray to restart the worker, then give it the datasets again."""
        ray = self._ray
        while not self._closed:
            try:
                ray.get(self._workers[index].ping.remote(), timeout=10)
                for ds_id, fn in self._datasets.items():  # a new process has none of them
                    ray.get(self._workers[index].make_dataset.remote(ds_id, fn), timeout=60)
                break
            except Exception:
                time.sleep(0.2)
        self.worker_restarts[index] += 1
        return set()

    def _ps_dead(self) -> list[int]:
        dead = []
        for i, shard in enumerate(self._shards):
            try:
                self._ray.get(shard.pid.remote(), timeout=10)
            except Exception:
                dead.append(i)
        return dead

    def _ps_error(self, cause: BaseException) -> errors.UnavailableError:
        dead = self._ps_dead()
        tasks = ", ".join(f"ps:{i}" for i in dead) or "a parameter server"
        return errors.UnavailableError(
            None, "ClusterCoordinator",
            f"ClusterCoordinator: parameter server {tasks} is gone (its variables and "
            f"optimizer state with it); training cannot go on. Create a new strategy and "
            f"coordinator, restore the last checkpoint into the model, and schedule again. "
            f"Cause: {type(cause).__name__}: {str(cause).splitlines()[0][:200]}")

    def _fail(self, closure: _Closure, error: BaseException) -> None:
        closure.value._set(error=error)
        with self._cv:
            self._in_flight -= 1
            if isinstance(error, errors.UnavailableError) or not isinstance(
                    error, errors.OutOfRangeError):
                self._error = self._error or error
            self._cv.notify_all()


def _cause(e: BaseException) -> BaseException:
    """The user's exception inside Ray's task error."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e
