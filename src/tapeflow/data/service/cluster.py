"""Where the data service's servers live: named actors of a Ray cluster.

The first server or client of a process joins the cluster `RAY_ADDRESS` names (`ray start`),
or starts a local one, unless the program called `ray.init` itself. Servers are named actors in
one namespace, named by their address ("localhost:5050"): an address is how trainers and
workers find a server anywhere in the cluster, not a socket.
"""

from __future__ import annotations

import os
import time
from typing import Any

from tapeflow.framework import errors

NAMESPACE = "tapeflow.data.service"
LOOKUP_TIMEOUT_S = 30.0


def ray_module() -> Any:
    """`ray`, initialized (joining `RAY_ADDRESS` when set, else a local cluster)."""
    try:
        import ray
    except ImportError as e:
        raise ImportError("tf.data.experimental.service runs on Ray: "
                          "pip install 'tapeflow[ray]'") from e
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        env = {"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}
        if address:
            ray.init(address=address, log_to_driver=False, runtime_env=env)
        else:
            ray.init(num_cpus=max(2, os.cpu_count() or 2), include_dashboard=False,
                     log_to_driver=False, object_store_memory=256 << 20, runtime_env=env)
    return ray


def actor_name(kind: str, address: str) -> str:
    return f"{kind}@{address}"


def lookup(kind: str, address: str, timeout_s: float = LOOKUP_TIMEOUT_S) -> Any:
    """The actor handle of the `kind` server at `address`, waiting up to `timeout_s` for it."""
    ray = ray_module()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return ray.get_actor(actor_name(kind, address), namespace=NAMESPACE)
        except ValueError:
            if time.monotonic() >= deadline:
                raise errors.NotFoundError(
                    f"tf.data service: no {kind} at {address!r} in the Ray cluster (start a "
                    f"DispatchServer there first; addresses name servers in the cluster)"
                ) from None
            time.sleep(0.1)


def current_node_affinity() -> Any:
    """A scheduling strategy that keeps an actor on this machine (a server runs where the
    program that made it runs, as in TensorFlow), when this machine can host it."""
    ray = ray_module()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
