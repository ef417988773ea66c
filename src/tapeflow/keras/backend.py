"""``tf.keras.backend``: the session-wide Keras state (layer name counters, float type,
learning phase) and, through ``backend_math``, the tensor functions (``K.mean``...).

Keras gives every layer a unique default name per class (``dense``, ``dense_1`` ...);
``clear_session()`` starts the numbering again, as seed 004 relies on.
"""

from __future__ import annotations

import collections
import contextlib
import re

import numpy as np

_state = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}
_name_uids: collections.defaultdict[str, int] = collections.defaultdict(int)


def clear_session() -> None:
    """Forget every default layer name handed out, so numbering restarts at ``dense``, and the
    learning phase set by ``set_learning_phase``."""
    _name_uids.clear()
    _learning_phase["value"] = None


def unique_object_name(base: str, zero_based: bool = True) -> str:
    """`base` the first time, then ``base_1``, ``base_2`` ... (Keras's naming).

    With ``zero_based=False`` numbering starts at ``base_1`` (Keras's ``input_1``).
    """
    count = _name_uids[base]
    _name_uids[base] = count + 1
    if zero_based:
        return base if count == 0 else f"{base}_{count}"
    return f"{base}_{count + 1}"


def observe_object_name(name: str) -> None:
    """Reserve an explicitly given name so later default names skip it."""
    _name_uids[name] = max(_name_uids[name], 1)


def to_snake_case(name: str) -> str:
    """``BatchNormalization`` -> ``batch_normalization``, ``Conv2D`` -> ``conv2d``."""
    words = re.sub(r"(?<=.)([A-Z][a-z]+)", r"_\1", name)  # as tf-keras: no digits here
    snake = re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()
    return snake if not snake.startswith("_") else "private" + snake


def floatx() -> str:
    """The default float type of layer weights (``'float32'``)."""
    return _state["floatx"]


def set_floatx(value: str) -> None:
    """Change the default float type of new layers."""
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value!r}")
    _state["floatx"] = value


def epsilon() -> float:
    """The fuzz factor Keras adds to avoid division by zero and log(0)."""
    return _state["epsilon"]


def set_epsilon(value: float) -> None:
    _state["epsilon"] = float(value)


def image_data_format() -> str:
    return _state["image_data_format"]


def set_image_data_format(value: str) -> None:
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"Unknown data_format: {value!r}")
    _state["image_data_format"] = value


def get_value(x) -> np.ndarray:
    """The NumPy value of a variable or tensor."""
    return np.array(x)


def set_value(x, value) -> None:
    """Assign `value` to variable `x`."""
    x.assign(np.asarray(value, dtype=x.dtype.as_numpy_dtype))


def batch_get_value(tensors) -> list:
    return [get_value(t) for t in tensors]


def batch_set_value(tuples) -> None:
    for x, value in tuples:
        set_value(x, value)


def int_shape(x) -> tuple | None:
    """The static shape of `x` as a tuple of ints and None."""
    return x.shape.as_tuple() if hasattr(x.shape, "as_tuple") else tuple(x.shape)


def count_params(x) -> int:
    return int(np.prod(x.shape.as_list()))


_learning_phase = {"value": None}


def learning_phase() -> int:
    """0 (inference) unless ``set_learning_phase`` fixed it: in TensorFlow 2 the ``training``
    argument of each call decides, so outside ``fit`` this is 0, as in Keras."""
    value = _learning_phase["value"]
    return 0 if value is None else value


def set_learning_phase(value: int) -> None:
    """Deprecated in Keras 2 (pass ``training=`` instead); kept for old programs."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _learning_phase["value"] = value


_uids: collections.defaultdict[str, int] = collections.defaultdict(int)


def get_uid(prefix: str = "") -> int:
    """1, 2, 3 ... per prefix (Keras's graph-wide counter)."""
    _uids[prefix] += 1
    return _uids[prefix]


def reset_uids() -> None:
    _uids.clear()


@contextlib.contextmanager
def learning_phase_scope(value: int):
    """Within the block, ``learning_phase()`` is `value` (0 or 1)."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    previous = _learning_phase["value"]
    _learning_phase["value"] = value
    try:
        yield value
    finally:
        _learning_phase["value"] = previous


def is_keras_tensor(x) -> bool:
    """Whether `x` is a symbolic tensor of the functional API."""
    return bool(getattr(x, "_is_keras_tensor", False))


def __getattr__(name: str):
    """The tensor functions (``mean``, ``square``, ``clip`` ...) live in ``backend_math``."""
    if name.startswith("__"):
        raise AttributeError(name)
    import importlib

    math = importlib.import_module("tapeflow.keras.backend_math")
    if name in vars(math) and not name.startswith("_") and callable(vars(math)[name]):
        return vars(math)[name]
    raise AttributeError(f"module 'tapeflow.keras.backend' has no attribute {name!r}")
