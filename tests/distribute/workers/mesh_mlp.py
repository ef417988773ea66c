"""An MLP on a (batch x model) mesh of `mpiexec -n B*M` processes, trained 20 SGD steps;
the chief writes the full weights to OUT. B = M = 1 is the one-process reference.

usage: mesh_mlp.py OUT B M
"""

import sys

import numpy as np

import tapeflow as tf
from tapeflow.distribute import mesh_dense

dtensor = tf.experimental.dtensor
out, b, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mesh = dtensor.create_distributed_mesh([("batch", b), ("model", m)])
kernel_layout = dtensor.Layout([dtensor.UNSHARDED, "model"], mesh)
tf.random.set_seed(mesh.rank)  # ranks draw differently; the layers use rank 0's draw
layers = [mesh_dense.Dense(16, "relu", kernel_layout=kernel_layout),
          mesh_dense.Dense(8, "tanh", kernel_layout=kernel_layout),
          mesh_dense.Dense(4, kernel_layout=kernel_layout)]
rng = np.random.default_rng(0)
global_batch = 32
x = rng.normal(size=(20 * global_batch, 12)).astype(np.float32)
y = np.sin(x[:, :4] * 2.0).astype(np.float32)
batch_layout = dtensor.Layout.batch_sharded(mesh, "batch", rank=2)
optimizer = tf.keras.optimizers.SGD(0.2, momentum=0.5)


def forward(xb):
    for layer in layers:
        xb = layer(xb)
    return xb


@tf.function
def step(xb, yb):
    with tf.GradientTape() as tape:  # the mean over the global batch: local sum / global size
        loss = tf.reduce_sum(tf.square(forward(xb) - yb)) / (global_batch * 4)
    variables = [v for layer in layers for v in layer.trainable_variables]
    grads = mesh.all_reduce_gradients(tape.gradient(loss, variables), "batch")
    optimizer.apply_gradients(zip(grads, variables))
    return loss


for s in range(20):
    rows = slice(s * global_batch, (s + 1) * global_batch)
    step(tf.constant(batch_layout.local(x[rows])), tf.constant(batch_layout.local(y[rows])))
weights = [w for layer in layers for w in layer.full_weights()]
if mesh.rank == 0:
    np.savez(out, *weights)
