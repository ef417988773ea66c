"""Seed 004: the Keras CIFAR-10 CNN (1,250,858 parameters), compiled with RMSprop(lr=, decay=).

Uses ``tf.keras.datasets.cifar10`` when its files are present locally, else random images of
the same shape (the point is the model and the training loop, not the accuracy).

    python examples/cifar_cnn.py
"""

import numpy as np

import tapeflow as tf
from tapeflow.models import CifarCNN

try:
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.cifar10.load_data()
    x_train, x_test = x_train[:2048], x_test[:512]
    y_train, y_test = y_train[:2048], y_test[:512]
except (OSError, tf.errors.NotFoundError):
    rng = np.random.default_rng(0)
    x_train, y_train = rng.integers(0, 256, (2048, 32, 32, 3)), rng.integers(0, 10, (2048, 1))
    x_test, y_test = rng.integers(0, 256, (512, 32, 32, 3)), rng.integers(0, 10, (512, 1))
x_train = x_train.astype("float32") / 255
x_test = x_test.astype("float32") / 255
y_train = tf.keras.utils.to_categorical(y_train, num_classes=10)
y_test = tf.keras.utils.to_categorical(y_test, num_classes=10)

model = CifarCNN()
model.summary()
opt = tf.keras.optimizers.RMSprop(lr=0.0001, decay=1e-6)
model.compile(loss="categorical_crossentropy", optimizer=opt, metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=256, epochs=2, validation_data=(x_test, y_test),
          shuffle=True)
