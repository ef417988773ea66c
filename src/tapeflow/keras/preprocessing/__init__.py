"""``tf.keras.preprocessing``: the Keras 2 data helpers (also exported by ``tf.keras.utils``)
and the ``text``, ``sequence`` and ``image`` modules."""

from tapeflow.keras.preprocessing import image, sequence, text
from tapeflow.keras.preprocessing.directory import (
    image_dataset_from_directory,
    text_dataset_from_directory,
)
from tapeflow.keras.preprocessing.files import get_file, validate_file
from tapeflow.keras.preprocessing.sequence import pad_sequences
from tapeflow.keras.preprocessing.timeseries import timeseries_dataset_from_array

__all__ = ["get_file", "image", "image_dataset_from_directory", "pad_sequences", "sequence",
           "text", "text_dataset_from_directory", "timeseries_dataset_from_array",
           "validate_file"]
