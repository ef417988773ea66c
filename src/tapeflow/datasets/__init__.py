"""Data sets: built-in small ones (vendored MNIST subset, digits) and loaders for local files."""

from tapeflow.datasets import cifar10, mnist
from tapeflow.datasets.builtin import load_digits, load_mnist_5k

__all__ = ["cifar10", "load_digits", "load_mnist_5k", "mnist"]
