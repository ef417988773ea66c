"""``tf.keras.datasets``: the data engineer's loaders under Keras's module path."""

from tapeflow.datasets import cifar10, mnist

__all__ = ["cifar10", "mnist"]
