"""Seed 001: a DenseNet through the functional API (and, as the bonus, through Sequential).

Trains one epoch on the built-in MNIST subset with ``model.fit`` (the step runs as a graph).

    python examples/densenet_functional.py
"""

import numpy as np

import tapeflow as tf
from tapeflow.datasets import load_mnist_5k
from tapeflow.models import DenseNet, DenseNetSequential

(x_train, y_train), (x_test, y_test) = load_mnist_5k()
x_train = (x_train.astype(np.float32) / 255.0)[..., None]
x_test = (x_test.astype(np.float32) / 255.0)[..., None]

model = DenseNet(input_shape=(28, 28, 1), growth_rate=12, num_blocks=3, layers_per_block=4,
                 stem_strides=2, bn_momentum=0.9)
model.summary()
bonus = DenseNetSequential(input_shape=(28, 28, 1))
print(f"functional: {model.count_params():,} params; sequential: {bonus.count_params():,}")

model.compile(optimizer=tf.keras.optimizers.Adam(3e-3),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=64, epochs=1, validation_data=(x_test, y_test))
