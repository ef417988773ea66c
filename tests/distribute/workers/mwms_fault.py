"""A worker that misbehaves on purpose: rank 1 stalls (sleeps) or dies (SIGKILL) at step 2.

usage: mwms_fault.py {stall,kill,none} TIMEOUT_S
"""

import os
import signal
import sys
import time

import tapeflow as tf

fault, timeout = sys.argv[1], float(sys.argv[2])
strategy = tf.distribute.MultiWorkerMirroredStrategy(
    communication_options=tf.distribute.experimental.CommunicationOptions(
        timeout_seconds=timeout))
rank = strategy.cluster_resolver.task_id if strategy.cluster_resolver.task_type == "worker" \
    else 0
print(f"started {strategy.cluster_resolver.task_type}:{rank} of "
      f"{strategy.num_replicas_in_sync}", flush=True)
for step in range(4):
    if step == 2 and strategy.worker_index == 1:
        if fault == "stall":
            time.sleep(60)
        elif fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
    total = strategy.reduce("SUM", tf.constant([1.0, 2.0]), axis=None)
    print(f"step {step} total {total.numpy().tolist()}", flush=True)
print("done", flush=True)
