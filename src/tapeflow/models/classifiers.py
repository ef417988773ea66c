"""Small classifiers from the seeds: the seed-004 CIFAR CNN and MLP, an LSTM text classifier."""

from __future__ import annotations

from typing import Any

from tapeflow import keras
from tapeflow.keras import layers


def CifarCNN(input_shape: Any = (32, 32, 3), num_classes: int = 10) -> keras.Sequential:  # noqa: N802
    """Seed 004's Keras CIFAR-10 network (softmax outputs); 1,250,858 parameters on 32x32x3."""
    return keras.Sequential([
        layers.Conv2D(32, (3, 3), padding="same", input_shape=tuple(input_shape)),
        layers.Activation("relu"),
        layers.Conv2D(32, (3, 3)),
        layers.Activation("relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Dropout(0.25),
        layers.Conv2D(64, (3, 3), padding="same"),
        layers.Activation("relu"),
        layers.Conv2D(64, (3, 3)),
        layers.Activation("relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Dropout(0.25),
        layers.Flatten(),
        layers.Dense(512),
        layers.Activation("relu"),
        layers.Dropout(0.5),
        layers.Dense(num_classes),
        layers.Activation("softmax"),
    ])


class MLP(keras.Model):
    """Seed 004's subclassed model: Flatten -> Dense(relu) -> Dropout -> Dense (logits)."""

    def __init__(self, input_shape: Any = (28, 28), hidden: int = 128, dropout: float = 0.2,
                 num_classes: int = 10, **kwargs: Any):
        super().__init__(**kwargs)
        self.flatten = layers.Flatten(input_shape=tuple(input_shape))
        self.dense_1 = layers.Dense(hidden, activation="relu")
        self.dropout = layers.Dropout(dropout)
        self.dense_2 = layers.Dense(num_classes)

    def call(self, x: Any, training: Any = None):
        x = self.flatten(x)
        x = self.dense_1(x)
        x = self.dropout(x, training=training)
        return self.dense_2(x)


def LSTMClassifier(vocab_size: int, sequence_length: int, embed_dim: int = 64,  # noqa: N802
                   units: int = 64, num_classes: int = 2) -> keras.Sequential:
    """Embedding -> LSTM -> Dense logits over fixed-length [batch, sequence_length] id inputs."""
    return keras.Sequential([
        layers.Embedding(vocab_size, embed_dim, input_length=sequence_length),
        layers.LSTM(units),
        layers.Dense(num_classes),
    ])
