"""`tf.io`: files, TFRecords, Example / SequenceExample parsing, CSV, tensors as bytes, images."""

from tapeflow.image.decode import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
    is_jpeg,
)
from tapeflow.io import gfile
from tapeflow.io import io_misc as _io_misc  # decode_compressed, matching_files, ...
from tapeflow.io import proto_codec as _proto_codec  # decode_proto, encode_proto
from tapeflow.io import sparse_serialization as _sparse_serialization
from tapeflow.io.csv_decode import decode_csv
from tapeflow.io.decode import decode_base64, decode_raw, encode_base64
from tapeflow.io.files import read_file, write_file
from tapeflow.io.parsing import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    RaggedFeature,
    SparseFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from tapeflow.io.sequence_parsing import parse_sequence_example, parse_single_sequence_example
from tapeflow.io.tensor_proto import parse_tensor, serialize_tensor
from tapeflow.io.tfrecord import TFRecordOptions, TFRecordWriter, tf_record_iterator
from tapeflow.sparse.tensor import SparseTensor

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "RaggedFeature", "SparseFeature",
           "SparseTensor", "TFRecordOptions", "TFRecordWriter", "VarLenFeature",
           "decode_and_crop_jpeg",
           "decode_base64", "decode_bmp", "decode_csv", "decode_gif", "decode_image",
           "decode_jpeg", "decode_png", "decode_raw", "encode_base64", "encode_jpeg",
           "encode_png", "extract_jpeg_shape", "gfile", "is_jpeg", "parse_example",
           "parse_sequence_example", "parse_single_example", "parse_single_sequence_example",
           "parse_tensor", "read_file", "serialize_tensor", "tf_record_iterator", "write_file"]
