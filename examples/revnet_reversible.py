"""Seed 002: RevNet's reversible backward pass checked against regular backprop, then trained.

    python examples/revnet_reversible.py
"""

import numpy as np

import tapeflow as tf
from tapeflow.models import Residual, RevNet

# the blog's check: gradients from reconstruction equal the true gradients
block = Residual(filters=8)
x = tf.random.normal(shape=(4, 8, 8, 16))
dy = tf.random.normal(shape=(4, 8, 8, 16))
with tf.GradientTape() as tape:
    tape.watch(x)
    y = block(x)
dx_true = tape.gradient(y, x, output_gradients=dy)
_, dx, _ = block.backward_grads(y, dy)
diff_abs = tf.reshape(abs(dx - dx_true), [-1])
print("max |dx - dx_true| =", float(tf.reduce_max(diff_abs)))
assert all(diff_abs < 1e-5)

# a few reversible training steps, a checkpoint, and the same steps as a graph
model = RevNet(num_classes=10, filters=8, num_blocks=3)
optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
images = tf.random.normal((16, 16, 16, 3))
labels = tf.constant(np.arange(16) % 10)


@tf.function
def train_step(images, labels):
    grads, loss = model.compute_gradients(images, labels, training=True)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step in range(5):
    print(f"step {step}: loss {float(train_step(images, labels)):.4f}")
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
print("saved", checkpoint.save("/tmp/revnet_example/ckpt"))
