"""`tf.data`: input pipelines with real background parallelism and a self-explaining AUTOTUNE."""

from tapeflow.data import experimental
from tapeflow.data.autotune import AUTOTUNE, AutotuneReport
from tapeflow.data.batching import DatasetSpec
from tapeflow.data.dataset import INFINITE as INFINITE_CARDINALITY
from tapeflow.data.dataset import UNKNOWN as UNKNOWN_CARDINALITY
from tapeflow.data.dataset import Dataset
from tapeflow.data.iterator import DatasetIterator as Iterator
from tapeflow.data.iterator import NumpyIterator
from tapeflow.data.options import Options, ThreadingOptions
from tapeflow.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from tapeflow.ops.script_ops import py_function

__all__ = ["AUTOTUNE", "AutotuneReport", "Dataset", "DatasetSpec", "FixedLengthRecordDataset",
           "INFINITE_CARDINALITY", "Iterator", "NumpyIterator", "Options", "TFRecordDataset",
           "TextLineDataset", "ThreadingOptions", "UNKNOWN_CARDINALITY", "experimental",
           "py_function"]
