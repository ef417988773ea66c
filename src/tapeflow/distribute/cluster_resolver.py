"""Cluster descriptions as TensorFlow users write them: ``tf.train.ClusterSpec``,
``SimpleClusterResolver`` and ``TFConfigClusterResolver`` (the ``TF_CONFIG`` environment
variable). They only describe the job; the strategies decide how to connect its tasks."""

from __future__ import annotations

import json
import os
from typing import Any

_ORDER = ("chief", "worker", "ps", "evaluator")


class ClusterSpec:
    """Task addresses by job name (``tf.train.ClusterSpec``): ``{"worker": ["h1:2222", ...]}``."""

    def __init__(self, cluster: Any):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, dict):
            raise TypeError(f"ClusterSpec: expected a dict of job name -> list of addresses, "
                            f"got {type(cluster).__name__}")
        jobs: dict[str, dict[int, str]] = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, dict):
                jobs[str(job)] = {int(i): str(a) for i, a in tasks.items()}
            elif isinstance(tasks, (list, tuple)):
                jobs[str(job)] = {i: str(a) for i, a in enumerate(tasks)}
            else:
                raise TypeError(f"ClusterSpec: tasks of job {job!r} must be a list or a dict, "
                                f"got {type(tasks).__name__}")
        self._jobs = jobs

    @property
    def jobs(self) -> list[str]:
        return list(self._jobs)

    def num_tasks(self, job_name: str) -> int:
        return len(self._jobs.get(job_name, {}))

    def task_indices(self, job_name: str) -> list[int]:
        return sorted(self._jobs.get(job_name, {}))

    def task_address(self, job_name: str, task_index: int) -> str:
        try:
            return self._jobs[job_name][task_index]
        except KeyError:
            raise ValueError(f"ClusterSpec: no task {task_index} in job {job_name!r} "
                             f"(jobs: {self.as_dict()})") from None

    def job_tasks(self, job_name: str) -> list[str]:
        tasks = self._jobs.get(job_name, {})
        return [tasks[i] for i in sorted(tasks)]

    def as_dict(self) -> dict[str, list[str]]:
        return {job: self.job_tasks(job) for job in self._jobs}

    def as_cluster_def(self) -> dict[str, list[str]]:
        return self.as_dict()

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ClusterSpec) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()})"


class ClusterResolver:
    """Base of the resolvers: the cluster, and which task this process is."""

    task_type: str | None = None
    task_id: int | None = None
    rpc_layer: str | None = None

    def cluster_spec(self) -> ClusterSpec:
        raise NotImplementedError(f"{type(self).__name__} must implement cluster_spec")

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        task_type = task_type if task_type is not None else self.task_type
        task_id = task_id if task_id is not None else self.task_id
        if not task_type or task_id is None:
            return ""
        address = self.cluster_spec().task_address(task_type, task_id)
        layer = rpc_layer or self.rpc_layer
        return f"{layer}://{address}" if layer else address

    def num_accelerators(self, task_type: str | None = None, task_id: int | None = None,
                         config_proto: Any = None) -> dict[str, int]:
        return {}

    @property
    def environment(self) -> str:
        return ""

    def worker_tasks(self) -> list[tuple[str, int]]:
        """The synchronous replicas in rank order: the chief (if any) first, then the workers."""
        spec = self.cluster_spec()
        tasks = [("chief", i) for i in spec.task_indices("chief")]
        return tasks + [("worker", i) for i in spec.task_indices("worker")]

    @property
    def num_workers(self) -> int:
        return len(self.worker_tasks())


class SimpleClusterResolver(ClusterResolver):
    """A resolver over a ClusterSpec given in code."""

    def __init__(self, cluster_spec: Any, master: str = "", task_type: str | None = None,
                 task_id: int | None = None, environment: str = "", num_accelerators: Any = None,
                 rpc_layer: str | None = None):
        self._spec = ClusterSpec(cluster_spec)
        self._master = master
        self.task_type = task_type
        self.task_id = task_id
        self.rpc_layer = rpc_layer
        self._environment = environment

    def cluster_spec(self) -> ClusterSpec:
        return self._spec

    def master(self, task_type: str | None = None, task_id: int | None = None,
               rpc_layer: str | None = None) -> str:
        if task_type is None and task_id is None and self._master:
            return self._master
        return super().master(task_type, task_id, rpc_layer)

    @property
    def environment(self) -> str:
        return self._environment


class TFConfigClusterResolver(ClusterResolver):
    """Reads ``TF_CONFIG`` (``{"cluster": {...}, "task": {"type": ..., "index": ...}}``)."""

    def __init__(self, task_type: str | None = None, task_id: int | None = None,
                 rpc_layer: str | None = None, environment: str | None = None):
        config = _tf_config()
        task = config.get("task", {})
        self.task_type = task_type if task_type is not None else task.get("type")
        self.task_id = int(task_id if task_id is not None else task.get("index", 0))
        self.rpc_layer = rpc_layer if rpc_layer is not None else config.get("rpc_layer")
        self._environment = environment if environment is not None else \
            config.get("environment", "")
        self._spec = ClusterSpec(config.get("cluster", {}))
        if self._spec and self.task_type not in _ORDER:
            raise ValueError(f"TF_CONFIG: task type {self.task_type!r} is not one of {_ORDER}")
        if self._spec and self.task_id >= self._spec.num_tasks(self.task_type):
            raise ValueError(f"TF_CONFIG: task {self.task_type}:{self.task_id} is not in the "
                             f"cluster {self._spec.as_dict()}")

    def cluster_spec(self) -> ClusterSpec:
        return self._spec

    @property
    def environment(self) -> str:
        return self._environment


def _tf_config() -> dict:
    raw = os.environ.get("TF_CONFIG", "")
    if not raw.strip():
        return {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON ({e}): {raw[:200]!r}") from None
    if not isinstance(config, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object, got {raw[:200]!r}")
    return config
