"""TensorFlow's deprecation notice for ``tf.feature_column``: logged once per function, as
TF 2.21 does (a WARNING naming the caller's file and line)."""

from __future__ import annotations

import logging
import sys

_KERAS = ("Use Keras preprocessing layers instead, either directly or via the "
          "`tf.keras.utils.FeatureSpace` utility. Each of `tf.feature_column.*` has a functional "
          "equivalent in `tf.keras.layers` for feature preprocessing when training a Keras model.")
_CROSSED = ("Use `tf.keras.layers.experimental.preprocessing.HashedCrossing` instead for feature "
            "crossing when preprocessing data to train a Keras model.")
_warned: set[str] = set()


def warn_deprecated(function: str) -> None:
    """Log TF's notice for `function` the first time it is called."""
    if function in _warned:
        return
    _warned.add(function)
    caller = sys._getframe(2)
    how = _CROSSED if function == "crossed_column" else _KERAS
    logging.getLogger("tapeflow").warning(
        "From %s:%d: %s (from tensorflow.python.feature_column.feature_column_v2) is deprecated "
        "and will be removed in a future version.\nInstructions for updating:\n%s",
        caller.f_code.co_filename, caller.f_lineno, function, how)
