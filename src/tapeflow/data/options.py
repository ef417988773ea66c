"""`tf.data.Options`: per-pipeline settings (determinism, autotune budgets, threading)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class AutotuneOptions:
    """Budgets the autotuner stays within; None means "pick a default" (cores, half of free RAM)."""

    enabled: bool | None = None
    cpu_budget: int | None = None
    ram_budget: int | None = None


@dataclass
class ThreadingOptions:
    """Caps on worker threads (`private_threadpool_size` bounds every parallel stage)."""

    private_threadpool_size: int | None = None
    max_intra_op_parallelism: int | None = None


@dataclass
class OptimizationOptions:
    """Pipeline rewrites: `map_and_batch_fusion` (default on) lets `map(f).batch(n)` call `f` on
    whole batches when that is checked to give the same elements (see data/vectorize.py)."""

    apply_default_optimizations: bool | None = None
    map_and_batch_fusion: bool | None = None
    map_parallelization: bool | None = None


@dataclass
class DistributeOptions:
    """Accepted for TF compatibility (`auto_shard_policy` is used by distribute strategies)."""

    auto_shard_policy: Any = None
    num_devices: int | None = None


@dataclass
class Options:
    """Options for a whole pipeline; set with `Dataset.with_options` and merged across inputs."""

    deterministic: bool | None = None
    autotune: AutotuneOptions = field(default_factory=AutotuneOptions)
    threading: ThreadingOptions = field(default_factory=ThreadingOptions)
    experimental_optimization: OptimizationOptions = field(default_factory=OptimizationOptions)
    experimental_distribute: DistributeOptions = field(default_factory=DistributeOptions)
    experimental_deterministic: bool | None = None
    experimental_slack: bool | None = None
    experimental_external_state_policy: Any = None

    def merge(self, other: Options) -> Options:
        """Values set in `other` win; unset (None) ones keep ours."""
        return _merge(self, other)

    @property
    def is_deterministic(self) -> bool:
        """The effective default for `deterministic=None` stages (TF: deterministic)."""
        for value in (self.deterministic, self.experimental_deterministic):
            if value is not None:
                return bool(value)
        return True


def _merge(a: Any, b: Any) -> Any:
    out = copy.copy(a)
    for f in fields(a):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        if hasattr(va, "__dataclass_fields__"):
            setattr(out, f.name, _merge(va, vb))
        elif vb is not None:
            setattr(out, f.name, vb)
    return out
