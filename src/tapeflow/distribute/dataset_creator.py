"""``tf.keras.utils.experimental.DatasetCreator``: input for ``Model.fit`` given as a function
of an ``InputContext`` rather than as a dataset, so that each worker of a
``ParameterServerStrategy`` builds its own pipeline (its shard of the files or records).

Under any other strategy ``fit`` calls the function once, with one input pipeline.
``steps_per_epoch`` is required, as in TensorFlow: the pipeline is expected to repeat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapeflow._api import export


@export("keras.utils.experimental.DatasetCreator")
class DatasetCreator:
    """Wraps `dataset_fn(input_context) -> tf.data.Dataset` for ``Model.fit``."""

    def __init__(self, dataset_fn: Callable, input_options: Any = None):
        if not callable(dataset_fn):
            raise TypeError(f"DatasetCreator: dataset_fn must be callable, got "
                            f"{type(dataset_fn).__name__}")
        self.dataset_fn = dataset_fn
        self.input_options = input_options

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from tapeflow.data import Dataset

        dataset = self.dataset_fn(*args, **kwargs)
        if not isinstance(dataset, Dataset):
            raise TypeError(f"DatasetCreator: dataset_fn must return a tf.data.Dataset, got "
                            f"{type(dataset).__name__}")
        return dataset
