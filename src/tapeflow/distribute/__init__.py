"""``tf.distribute``: strategies for data-parallel and multi-worker training.

One process: ``MirroredStrategy`` (a replica per logical CPU, each on a thread) /
``OneDeviceStrategy``. Several processes:
``MultiWorkerMirroredStrategy`` (synchronous all-reduce over MPI), ``ParameterServerStrategy``
(asynchronous, parameter servers and workers as Ray actors). See docs/distribute.md.
"""

from types import SimpleNamespace as _Namespace

from tapeflow._api import export_value as _export_value
from tapeflow.distribute import cluster_resolver, dataset_creator, keras_fit, mesh, partitioners
from tapeflow.distribute.cluster_resolver import ClusterSpec
from tapeflow.distribute.communicator import CollectiveTimeoutError
from tapeflow.distribute.cross_device_ops import (
    CrossDeviceOps,
    HierarchicalCopyAllReduce,
    NcclAllReduce,
    ReductionToOneDevice,
)
from tapeflow.distribute.input_lib import AutoShardPolicy, DistributedDataset
from tapeflow.distribute.mirrored import MirroredStrategy, PerReplica
from tapeflow.distribute.multi_worker import (
    CommunicationImplementation,
    CommunicationOptions,
    MultiWorkerMirroredStrategy,
)
from tapeflow.distribute.options import InputOptions, InputReplicationMode, RunOptions
from tapeflow.distribute.parameter_server import (
    ClusterCoordinator,
    ParameterServerStrategy,
    PerWorkerDataset,
    RemoteValue,
)
from tapeflow.distribute.sharded_variable import ShardedVariable
from tapeflow.distribute.strategy import (
    InputContext,
    OneDeviceStrategy,
    ReduceOp,
    ReplicaContext,
    Strategy,
    compute_average_loss,
    experimental_set_strategy,
    get_replica_context,
    get_strategy,
    has_strategy,
    in_cross_replica_context,
    scale_loss_for_distribution,
)

DistributedValues = PerReplica  # TF's base of per-replica values: strategy.run's results
_export_value("distribute.DistributedValues", DistributedValues)

dtensor = _Namespace(
    Mesh=mesh.Mesh, Layout=mesh.Layout, UNSHARDED=mesh.UNSHARDED,
    create_distributed_mesh=mesh.create_distributed_mesh, create_mesh=mesh.create_mesh,
)
_export_value("experimental.dtensor", dtensor)

experimental = _Namespace(
    MultiWorkerMirroredStrategy=MultiWorkerMirroredStrategy,
    CommunicationOptions=CommunicationOptions,
    CommunicationImplementation=CommunicationImplementation,
    CollectiveCommunication=CommunicationImplementation,
    ParameterServerStrategy=ParameterServerStrategy,
    partitioners=partitioners,
    ShardedVariable=ShardedVariable,
    coordinator=_Namespace(ClusterCoordinator=ClusterCoordinator, RemoteValue=RemoteValue,
                           PerWorkerValues=PerWorkerDataset),
)
