"""``tf.keras.datasets``: Keras's loaders, reading the files Keras keeps in its cache
(``~/.keras/datasets`` or ``$KERAS_HOME/datasets``) under Keras's names and formats; nothing is
downloaded, and a missing file raises an error naming the URL and the place to put it."""

from tapeflow.datasets import cifar10, mnist
from tapeflow.keras.datasets import boston_housing, cifar100, fashion_mnist, imdb, reuters

__all__ = ["boston_housing", "cifar10", "cifar100", "fashion_mnist", "imdb", "mnist", "reuters"]
