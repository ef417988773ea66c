"""Run with TensorFlow 2.21 (not in CI): how far the small DenseNet of the distributed tests
drifts under Adam(0.01) in 20 steps when each batch of 64 is fed in reverse order (the same
mathematics, another rounding). Recorded on 2026-11-24 (OMP_NUM_THREADS=1):

    float32 max drift reversed vs not after 20 steps: 0.04699946
    float64 max drift reversed vs not after 20 steps: 1.39e-11

So in float32 no data-parallel run can match one process to 1e-5 with this model and optimizer;
tests/distribute/test_multi_worker.py checks the float64 agreement and the float32 band.

usage: python densenet_adam_reorder.py {float32,float64}
"""

import sys

import numpy as np
import tensorflow as tf

L = tf.keras.layers
dtype = sys.argv[1] if len(sys.argv) > 1 else "float32"
tf.keras.backend.set_floatx(dtype)


def build() -> tf.keras.Model:
    """The zoo's DenseNet((8, 8, 3), 3, growth_rate=4, num_blocks=2, layers_per_block=2,
    initial_filters=8)."""
    inputs = tf.keras.Input((8, 8, 3))
    x = L.Conv2D(8, 3, padding="same")(inputs)
    for b, channels in enumerate([16, 24]):
        for _ in range(2):
            y = L.Conv2D(4, 3, padding="same")(L.ReLU()(L.BatchNormalization()(x)))
            x = L.Concatenate()([x, y])
        if b == 0:
            x = L.Conv2D(channels, 1)(L.ReLU()(L.BatchNormalization()(x)))
            x = L.AveragePooling2D(2)(x)
    x = L.ReLU()(L.BatchNormalization()(x))
    return tf.keras.Model(inputs, L.Dense(3)(L.GlobalAveragePooling2D()(x)))


rng = np.random.default_rng(0)
mlp_x = rng.normal(size=(64 * 20, 12)).astype(dtype)
y = np.tanh(mlp_x @ rng.normal(size=(12, 3))).astype(dtype)
x = rng.normal(size=(64 * 20, 8, 8, 3)).astype(dtype)
tf.random.set_seed(1)
initial = build().get_weights()
finals = []
for reverse in (False, True):
    model = build()
    model.set_weights(initial)
    model.compile(tf.keras.optimizers.Adam(0.01), "mse")
    order = np.concatenate([np.arange(i + 63, i - 1, -1) if reverse else np.arange(i, i + 64)
                            for i in range(0, len(x), 64)])
    model.fit(x[order], y[order], batch_size=64, epochs=1, shuffle=False, verbose=0)
    finals.append(model.get_weights())
print(dtype, "max drift reversed vs not after 20 steps:",
      max(np.abs(a - b).max() for a, b in zip(*finals)))
