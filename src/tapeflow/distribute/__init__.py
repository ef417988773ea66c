"""``tf.distribute``: strategies for data-parallel training (single-process form for now)."""

from tapeflow.distribute.strategy import (
    InputContext,
    MirroredStrategy,
    OneDeviceStrategy,
    ReduceOp,
    ReplicaContext,
    Strategy,
    get_replica_context,
    get_strategy,
    has_strategy,
    in_cross_replica_context,
)
