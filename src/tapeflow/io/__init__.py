"""`tf.io`: files, TFRecords, tf.train.Example parsing and image decoding."""

from tapeflow.image.decode import decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png
from tapeflow.io.decode import decode_raw
from tapeflow.io.files import read_file, write_file
from tapeflow.io.parsing import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from tapeflow.io.tfrecord import TFRecordOptions, TFRecordWriter, tf_record_iterator
from tapeflow.sparse.tensor import SparseTensor

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "RaggedFeature", "SparseTensor",
           "TFRecordOptions", "TFRecordWriter", "VarLenFeature", "decode_image", "decode_jpeg",
           "decode_png", "decode_raw", "encode_jpeg", "encode_png", "parse_example",
           "parse_single_example", "read_file", "tf_record_iterator", "write_file"]
