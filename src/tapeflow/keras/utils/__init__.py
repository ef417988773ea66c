"""``tf.keras.utils``: the helpers programs reach for (``to_categorical``, ``set_random_seed``,
``Sequence``, ``Progbar``, ``pack_x_y_sample_weight``...)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from tapeflow.keras.callbacks import Progbar
from tapeflow.keras.engine.data_adapter import unpack_x_y_sample_weight
from tapeflow.keras.engine.sequence import PyDataset, Sequence
from tapeflow.keras.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
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
from tapeflow.keras.saving.serialization import deserialize_keras_object, serialize_keras_object
from tapeflow.keras.utils.image_utils import array_to_img, img_to_array, load_img, save_img
from tapeflow.keras.utils.layer_utils import warmstart_embedding_matrix
from tapeflow.keras.utils.vis_utils import model_to_dot, plot_model

__all__ = ["CustomObjectScope", "Progbar", "PyDataset", "Sequence", "array_to_img",
           "custom_object_scope", "deserialize_keras_object", "disable_interactive_logging",
           "enable_interactive_logging", "get_custom_objects",
           "get_file", "get_registered_name", "get_registered_object",
           "get_source_inputs", "image_dataset_from_directory", "img_to_array",
           "is_interactive_logging_enabled",
           "is_keras_tensor", "load_img", "model_to_dot", "normalize",
           "pack_x_y_sample_weight", "pad_sequences", "plot_model",
           "register_keras_serializable", "save_img", "serialize_keras_object",
           "set_random_seed", "split_dataset", "text_dataset_from_directory",
           "timeseries_dataset_from_array", "to_categorical", "to_ordinal",
           "unpack_x_y_sample_weight", "validate_file", "warmstart_embedding_matrix"]


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


def to_ordinal(y: Any, num_classes: int | None = None, dtype: str = "float32") -> np.ndarray:
    """Ordinal (cumulative) encoding of integer labels: label k has its first k entries 1,
    shape (..., num_classes - 1)."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape[:-1] if y.ndim > 1 and y.shape[-1] == 1 else y.shape
    y = y.reshape(-1)
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 1
    out = (np.arange(num_classes - 1)[None, :] < y[:, None]).astype(dtype)
    return out.reshape(shape + (num_classes - 1,))


def get_source_inputs(tensor: Any, layer: Any = None, node_index: Any = None) -> list:
    """The ``keras.Input`` tensors a symbolic tensor was computed from."""
    from tapeflow.keras.applications.imagenet_utils import source_inputs

    found = source_inputs(tensor)
    return found if isinstance(found, list) else [found]


def split_dataset(dataset: Any, left_size: Any = None, right_size: Any = None,
                  shuffle: bool = False, seed: int | None = None) -> tuple:
    """Split arrays (or a tuple/dict of arrays, or a finite Dataset) into two Datasets of
    `left_size` / `right_size` samples (a float is a fraction; one may be None)."""
    from tapeflow.data import Dataset

    if isinstance(dataset, Dataset):
        samples = list(dataset.as_numpy_iterator())
        arrays = tuple(np.stack([s[i] for s in samples]) for i in range(len(samples[0]))) \
            if samples and isinstance(samples[0], tuple) else np.stack(samples)
    else:
        arrays = dataset
    flat = list(arrays.values()) if isinstance(arrays, dict) else \
        list(arrays) if isinstance(arrays, (tuple, list)) else [arrays]
    total = len(flat[0])
    if any(len(a) != total for a in flat):
        raise ValueError("split_dataset: all arrays must have the same number of samples")
    left, right = _split_sizes(left_size, right_size, total)
    order = np.arange(total)
    if shuffle:
        np.random.default_rng(seed).shuffle(order)

    def part(index: np.ndarray) -> Any:
        if isinstance(arrays, dict):
            return Dataset.from_tensor_slices({k: np.asarray(v)[index]
                                               for k, v in arrays.items()})
        if isinstance(arrays, (tuple, list)):
            return Dataset.from_tensor_slices(tuple(np.asarray(a)[index] for a in arrays))
        return Dataset.from_tensor_slices(np.asarray(arrays)[index])

    return part(order[:left]), part(order[left:left + right])


def _split_sizes(left: Any, right: Any, total: int) -> tuple[int, int]:
    if left is None and right is None:
        raise ValueError("split_dataset: you must specify either `left_size` or `right_size`")

    def count(size: Any, name: str) -> int | None:
        if size is None:
            return None
        if isinstance(size, float):
            if not 0 < size < 1:
                raise ValueError(f"split_dataset: a float `{name}` must be in (0, 1), got "
                                 f"{size}")
            return int(round(size * total))
        if not 0 < size <= total:
            raise ValueError(f"split_dataset: `{name}`={size} is out of range for {total} "
                             f"samples")
        return int(size)

    left, right = count(left, "left_size"), count(right, "right_size")
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(f"split_dataset: left_size + right_size = {left + right} is more than "
                         f"the {total} samples")
    return left, right
