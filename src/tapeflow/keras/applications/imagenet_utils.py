"""What every ``tf.keras.applications`` family shares: input-shape checks, ImageNet
preprocessing modes, ``decode_predictions`` and loading weight files.

Keras 2 semantics (tf-keras 2.21): the same defaults, error messages and preprocessing
constants. Nothing is downloaded unless ``weights="imagenet"`` is asked for and the file is not
in the Keras cache (``~/.keras/models``).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

CLASS_INDEX_FILE = "imagenet_class_index.json"
CLASS_INDEX_URL = ("https://storage.googleapis.com/download.tensorflow.org/data/"
                   "imagenet_class_index.json")
_CAFFE_MEAN = (103.939, 116.779, 123.68)  # BGR
_TORCH_MEAN = (0.485, 0.456, 0.406)
_TORCH_STD = (0.229, 0.224, 0.225)


def keras_cache_dir() -> str:
    """``$KERAS_HOME`` or ``~/.keras`` (Keras's cache root)."""
    return os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")


# --- preprocessing ------------------------------------------------------------------------------
def preprocess_input(x: Any, data_format: str | None = None, mode: str = "caffe") -> Any:
    """Scale a batch of RGB images in [0, 255] the way a family's ImageNet weights expect.

    ``caffe``: RGB -> BGR, minus the ImageNet mean per channel, no scaling; ``tf``: to [-1, 1];
    ``torch``: to [0, 1], minus mean, over std per channel. NumPy arrays come back as NumPy
    (float inputs are modified in place, as Keras does); tensors as tensors.
    """
    if mode not in ("caffe", "tf", "torch"):
        raise ValueError(f"Expected mode to be one of `caffe`, `tf` or `torch`. "
                         f"Received: mode={mode}")
    if data_format is None:
        from tapeflow.keras import backend

        data_format = backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f"Expected data_format to be one of `channels_first` or "
                         f"`channels_last`. Received: data_format={data_format}")
    if isinstance(x, np.ndarray):
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype("float32")
        return _preprocess(x, data_format, mode, np)
    import tapeflow as tf

    x = tf.convert_to_tensor(x)
    if not x.dtype.is_floating:
        x = tf.cast(x, "float32")
    return _preprocess(x, data_format, mode, tf)


def _preprocess(x: Any, data_format: str, mode: str, lib: Any) -> Any:
    if mode == "tf":
        return x / 127.5 - 1.0
    axis = 1 if data_format == "channels_first" and len(x.shape) > 3 else \
        (0 if data_format == "channels_first" else -1)
    if mode == "torch":
        x = x / 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        x = _reverse_channels(x, axis, lib)
        mean, std = _CAFFE_MEAN, None
    shape = [1] * len(x.shape)
    shape[axis] = 3
    dtype = x.dtype if lib is np else x.dtype.as_numpy_dtype
    x = x - np.asarray(mean, dtype=dtype).reshape(shape)
    if std is not None:
        x = x / np.asarray(std, dtype=dtype).reshape(shape)
    return x


def _reverse_channels(x: Any, axis: int, lib: Any) -> Any:
    if lib is np:
        return np.flip(x, axis=axis)
    return lib.reverse(x, [axis % len(x.shape)])


# --- predictions --------------------------------------------------------------------------------
_class_index: dict[str, list[str]] | None = None


def _load_class_index() -> dict[str, list[str]]:
    global _class_index
    if _class_index is None:
        path = os.path.join(keras_cache_dir(), "models", CLASS_INDEX_FILE)
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"decode_predictions needs the ImageNet class index, {CLASS_INDEX_FILE}, which "
                f"is not in the Keras cache ({path}). Download it from {CLASS_INDEX_URL} and "
                f"save it there (or call tf.keras.utils.get_file('{CLASS_INDEX_FILE}', "
                f"'{CLASS_INDEX_URL}', cache_subdir='models')).")
        with open(path, encoding="utf-8") as f:
            _class_index = json.load(f)
    return _class_index


def decode_predictions(preds: Any, top: int = 5) -> list[list[tuple[str, str, float]]]:
    """The `top` ImageNet classes of each row of `preds` (batch, 1000), as
    ``(class_id, class_name, score)`` tuples, best first."""
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError(f"`decode_predictions` expects a batch of predictions (i.e. a 2D array "
                         f"of shape (samples, 1000)). Received array with shape: {preds.shape}")
    index = _load_class_index()
    results = []
    for row in preds:
        best = row.argsort()[-top:][::-1]
        results.append([tuple(index[str(i)]) + (row[i],) for i in best])
    return results


# --- construction helpers -----------------------------------------------------------------------
def validate_weights(weights: Any, include_top: bool, classes: int) -> None:
    if not (weights in ("imagenet", None) or (isinstance(weights, (str, os.PathLike))
                                               and os.path.exists(weights))):
        raise ValueError(f"The `weights` argument should be either `None` (random "
                         f"initialization), `imagenet` (pre-training on ImageNet), or the path "
                         f"to the weights file to be loaded.  Received: weights={weights}")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(f'If using `weights` as `"imagenet"` with `include_top` as true, '
                         f'`classes` should be 1000.  Received: classes={classes}')


def validate_activation(classifier_activation: Any, weights: Any) -> None:
    if weights is None:
        return
    if classifier_activation not in {"softmax", None}:
        raise ValueError(f"Only `None` and `softmax` activations are allowed for the "
                         f"`classifier_activation` argument when using pretrained weights, "
                         f"with `include_top=True`; Received: "
                         f"classifier_activation={classifier_activation}")


def obtain_input_shape(input_shape: Any, default_size: int, min_size: int,
                       require_flatten: bool, weights: Any = None) -> tuple:
    """The model's input shape (channels last), checked as Keras checks it."""
    default_shape = (default_size, default_size, 3)
    if weights == "imagenet" and require_flatten and input_shape is not None:
        if tuple(input_shape) != default_shape:
            raise ValueError(f"When setting `include_top=True` and loading `imagenet` weights, "
                             f"`input_shape` should be {default_shape}.  Received: "
                             f"input_shape={tuple(input_shape)}")
        return default_shape
    if input_shape is None:
        return default_shape if require_flatten else (None, None, 3)
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise ValueError(f"`input_shape` must be a tuple of three integers.  Received: "
                         f"input_shape={input_shape}")
    if weights == "imagenet" and input_shape[-1] != 3:
        raise ValueError(f"The input must have 3 channels; Received "
                         f"`input_shape={input_shape}`")
    rows, cols = input_shape[0], input_shape[1]
    if (rows is not None and rows < min_size) or (cols is not None and cols < min_size):
        raise ValueError(f"Input size must be at least {min_size}x{min_size}; Received: "
                         f"input_shape={input_shape}")
    if require_flatten and None in input_shape:
        raise ValueError(f"If `include_top` is True, you should specify a static "
                         f"`input_shape`.  Received: input_shape={input_shape}")
    return input_shape


def model_input(input_tensor: Any, input_shape: tuple) -> tuple[Any, Any]:
    """(the tensor the network starts from, the model's inputs)."""
    from tapeflow.keras.engine.input_layer import Input

    if input_tensor is None:
        img_input = Input(shape=input_shape)
        return img_input, img_input
    if not getattr(input_tensor, "_is_keras_tensor", False):
        img_input = Input(tensor=input_tensor, shape=input_shape)
        return img_input, img_input
    return input_tensor, source_inputs(input_tensor)


def source_inputs(tensor: Any) -> list:
    """The ``keras.Input`` tensors `tensor` was computed from (Keras's get_source_inputs)."""
    found, seen, stack = [], set(), [tensor]
    while stack:
        t = stack.pop()
        node = t.node
        if node is None or not node.keras_inputs:  # an Input's tensor
            if id(t) not in seen:
                seen.add(id(t))
                found.append(t)
            continue
        stack.extend(reversed(node.keras_inputs))
    return found[0] if len(found) == 1 else found


def correct_pad(inputs: Any, kernel_size: Any) -> tuple:
    """The zero padding that makes a strided 'valid' convolution behave like TF's 'same' one on
    even and odd sizes (Keras's ``correct_pad``)."""
    size = tuple(inputs.shape)[1:3]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def head(x: Any, include_top: bool, pooling: Any, classes: int, classifier_activation: Any,
         weights: Any, names: tuple[str | None, str | None] = ("avg_pool", "max_pool")) -> Any:
    """GlobalAveragePooling + Dense('predictions') on top, else the optional pooling."""
    from tapeflow.keras import layers

    if include_top:
        validate_activation(classifier_activation, weights)
        x = layers.GlobalAveragePooling2D(name=names[0])(x)
        return layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    if pooling == "avg":
        return layers.GlobalAveragePooling2D(name=names[0])(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D(name=names[1])(x)
    return x


def load_weights(model: Any, weights: Any, include_top: bool, files: tuple[str, str],
                 base_url: str) -> None:
    """Load `weights` into `model`: a path (layers matched by name, Keras's files' layout), or
    'imagenet' from the Keras cache (``~/.keras/models/<file>``, downloaded there by
    ``get_file`` when missing, as Keras does)."""
    if weights is None:
        return
    if weights == "imagenet":
        from tapeflow.keras.utils import get_file

        name = files[0] if include_top else files[1]
        weights = get_file(name, base_url + name, cache_subdir="models")
    model.load_weights(weights, by_name=True)
