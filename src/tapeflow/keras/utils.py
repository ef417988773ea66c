"""``tf.keras.utils``: the helpers programs reach for (``to_categorical``, ``set_random_seed``,
``Sequence``, ``Progbar``, ``pack_x_y_sample_weight``...)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from tapeflow.keras.callbacks import Progbar
from tapeflow.keras.engine.data_adapter import unpack_x_y_sample_weight
from tapeflow.keras.engine.sequence import Sequence
from tapeflow.keras.preprocessing import (
    get_file,
    image_dataset_from_directory,
    pad_sequences,
    text_dataset_from_directory,
    timeseries_dataset_from_array,
    validate_file,
)
from tapeflow.keras.saving.object_registration import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)

__all__ = ["get_file", "image_dataset_from_directory", "pad_sequences",
           "text_dataset_from_directory", "timeseries_dataset_from_array", "validate_file",
           "CustomObjectScope", "Progbar", "Sequence", "custom_object_scope",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "is_keras_tensor", "normalize", "pack_x_y_sample_weight",
           "register_keras_serializable", "set_random_seed", "to_categorical",
           "unpack_x_y_sample_weight"]


def set_random_seed(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator and ``tf.random.set_seed`` at once,
    as Keras does: initializers, dropout and ``fit``'s shuffling then repeat run to run."""
    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed}")
    from tapeflow.ops.random_ops import set_seed

    random.seed(seed)
    np.random.seed(seed)
    set_seed(seed)


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The inverse of ``unpack_x_y_sample_weight``: ``x``, ``(x, y)`` or ``(x, y, sw)``; a
    tuple ``x`` alone is wrapped as ``(x,)`` so it is not read as ``(x, y)``."""
    if y is None:
        return (x,) if isinstance(x, (tuple, list)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def is_keras_tensor(x: Any) -> bool:
    """Whether `x` is a symbolic tensor from ``keras.Input`` or a layer call on one."""
    return bool(getattr(x, "_is_keras_tensor", False))


def to_categorical(y: Any, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """One-hot encode integer class labels: shape (..., num_classes).

    A trailing dimension of size 1 (labels of shape (n, 1), as CIFAR-10 ships them) is dropped
    first, as Keras does.
    """
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.reshape(-1)
    if y.size and y.min() < 0:
        raise ValueError(f"to_categorical: class labels must be >= 0, got {y.min()}")
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 0
    elif y.size and y.max() >= num_classes:
        raise ValueError(f"to_categorical: label {int(y.max())} is out of range for "
                         f"num_classes={num_classes}")
    out = np.zeros((y.size, num_classes), dtype=dtype)
    out[np.arange(y.size), y] = 1
    return out.reshape(shape + (num_classes,))


def normalize(x: Any, axis: int = -1, order: int = 2) -> np.ndarray:
    """Scale `x` to unit `order`-norm along `axis` (zero vectors stay zero)."""
    x = np.asarray(x)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)
