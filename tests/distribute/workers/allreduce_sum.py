"""Run under `mpiexec -n 2`: the gradient path (``all_reduce_gradients`` in small buckets)
against a float64 NumPy sum of both ranks' gradients, and results kept across later calls.

usage: allreduce_sum.py {check,stall}
check: three calls; each result equals NumPy's sum exactly (two float32 addends: one rounding
either way), and the first call's results, still held, keep their values after the others
(buffers are reused only once nothing holds them). Prints "ok".
stall: rank 1 sleeps before the call; rank 0 times out (3 s) in the bucket all-reduce.
"""

import sys
import time

import numpy as np

import tapeflow as tf
from tapeflow.distribute import collective_ops

mode = sys.argv[1]
strategy = tf.distribute.MultiWorkerMirroredStrategy(
    tf.distribute.experimental.CommunicationOptions(timeout_seconds=3 if mode == "stall" else 60))
comm = strategy.communicator
SHAPES = [(), (3, 4), (5, 3), (7,), (2, 3, 4), (1000,), (40, 25), (1,), (300, 2)]
DTYPES = [np.float32, np.float32, np.float64, np.float32, np.float32, np.float32, np.float64,
          np.float32, np.float32]


def values(rank: int, step: int) -> list:
    rng = np.random.default_rng([rank, step])
    arrays = [rng.normal(size=s).astype(d) for s, d in zip(SHAPES, DTYPES)]
    return [a.T if a.ndim == 2 else a for a in arrays]  # transposed: non-contiguous gradients


def expected(step: int) -> list:
    ranks = [values(r, step) for r in range(comm.size)]
    return [np.sum([np.asarray(v[i], np.float64) for v in ranks], axis=0).astype(DTYPES[i])
            for i in range(len(SHAPES))]


def step(s: int) -> list:
    grads = [tf.constant(v) for v in values(comm.rank, s)]
    return collective_ops.all_reduce_gradients(grads, comm, 4096)  # several buckets


if mode == "stall":
    if comm.rank == 1:
        time.sleep(20)
    step(0)
    sys.exit(0)
first = step(0)
for s, out in ((0, first), (1, step(1)), (2, step(2))):
    for r, e in zip(out, expected(s)):
        assert r.shape == e.shape and r.numpy().dtype == e.dtype, (r.shape, e.shape)
        np.testing.assert_array_equal(r.numpy(), e)
for r, e in zip(first, expected(0)):  # held across two later calls: untouched
    np.testing.assert_array_equal(r.numpy(), e)
print("ok", flush=True)
