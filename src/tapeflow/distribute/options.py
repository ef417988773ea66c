"""Option objects TF programs hand to strategies: ``tf.distribute.InputOptions`` (with
``InputReplicationMode``) and ``tf.distribute.RunOptions``.

Their fields are about placing data on accelerators and XLA on TPUs; tapeflow runs on the
host, so the strategies accept them, check their types, and have nothing to change."""

from __future__ import annotations

import enum
from typing import Any

from tapeflow._api import export


@export("distribute.InputReplicationMode")
class InputReplicationMode(enum.Enum):
    """One input pipeline per worker (shared by its replicas) or one per replica."""

    PER_WORKER = "PER_WORKER"
    PER_REPLICA = "PER_REPLICA"


@export("distribute.InputOptions")
class InputOptions:
    """How a distributed dataset is placed and replicated (TF's fields and defaults)."""

    def __init__(self, experimental_fetch_to_device: bool | None = None,
                 experimental_replication_mode: InputReplicationMode =
                 InputReplicationMode.PER_WORKER,
                 experimental_place_dataset_on_device: bool = False,
                 experimental_per_replica_buffer_size: int = 1):
        if not isinstance(experimental_replication_mode, InputReplicationMode):
            raise TypeError(f"InputOptions: experimental_replication_mode must be a tf."
                            f"distribute.InputReplicationMode, got "
                            f"{experimental_replication_mode!r}")
        if experimental_place_dataset_on_device and experimental_fetch_to_device:
            raise ValueError("InputOptions: experimental_place_dataset_on_device and "
                             "experimental_fetch_to_device cannot both be True")
        if int(experimental_per_replica_buffer_size) < 0:
            raise ValueError(f"InputOptions: experimental_per_replica_buffer_size must be >= 0,"
                             f" got {experimental_per_replica_buffer_size}")
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = int(experimental_per_replica_buffer_size)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"InputOptions({fields})"


@export("distribute.RunOptions")
class RunOptions:
    """``strategy.run`` options (TPU dynamic shapes and XLA settings in TF)."""

    def __init__(self, experimental_enable_dynamic_batch_size: bool = True,
                 experimental_bucketizing_dynamic_shape: bool = False,
                 experimental_xla_options: Any = None):
        self.experimental_enable_dynamic_batch_size = experimental_enable_dynamic_batch_size
        self.experimental_bucketizing_dynamic_shape = experimental_bucketizing_dynamic_shape
        self.experimental_xla_options = experimental_xla_options
