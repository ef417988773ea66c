"""``tf.distribute``: strategies for data-parallel and multi-worker training.

One process: ``MirroredStrategy`` / ``OneDeviceStrategy`` (one replica). Several processes:
``MultiWorkerMirroredStrategy`` (synchronous all-reduce over MPI). See docs/distribute.md.
"""

from types import SimpleNamespace as _Namespace

from tapeflow.distribute import cluster_resolver, keras_fit
from tapeflow.distribute.cluster_resolver import ClusterSpec
from tapeflow.distribute.communicator import CollectiveTimeoutError
from tapeflow.distribute.input_lib import AutoShardPolicy, DistributedDataset
from tapeflow.distribute.multi_worker import (
    CommunicationImplementation,
    CommunicationOptions,
    MultiWorkerMirroredStrategy,
)
from tapeflow.distribute.strategy import (
    InputContext,
    MirroredStrategy,
    OneDeviceStrategy,
    ReduceOp,
    ReplicaContext,
    Strategy,
    compute_average_loss,
    get_replica_context,
    get_strategy,
    has_strategy,
    in_cross_replica_context,
    scale_loss_for_distribution,
)

experimental = _Namespace(
    MultiWorkerMirroredStrategy=MultiWorkerMirroredStrategy,
    CommunicationOptions=CommunicationOptions,
    CommunicationImplementation=CommunicationImplementation,
    CollectiveCommunication=CommunicationImplementation,
)
