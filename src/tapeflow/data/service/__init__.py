"""`tf.data.experimental.service`: input pipelines on data workers that feed trainers, on Ray.

Servers are Ray actors (see servers.py); `distribute` / `from_dataset_id` read a job's elements
from the workers (client.py); the dispatcher keeps jobs, splits and claims so that in
`distributed_epoch` mode every element reaches the trainers exactly once, even when a worker
dies (dispatcher.py). Importing this module does not import Ray; the first server or read does.
"""

from tapeflow.data.service.client import distribute, from_dataset_id, register_dataset
from tapeflow.data.service.config import (
    CrossTrainerCache,
    DispatcherConfig,
    ShardingPolicy,
    WorkerConfig,
)
from tapeflow.data.service.servers import DispatchServer, WorkerServer

__all__ = ["CrossTrainerCache", "DispatchServer", "DispatcherConfig", "ShardingPolicy",
           "WorkerConfig", "WorkerServer", "distribute", "from_dataset_id", "register_dataset"]
