"""``tf.strings``: ops on string tensors (see strings/ops.py; hashes in strings/hashing.py)."""

from tapeflow.strings.extras import (
    ngrams,
    unicode_script,
    unicode_split_with_offsets,
    unicode_transcode,
    unsorted_segment_join,
)
from tapeflow.strings.ops import (
    as_string,
    bytes_split,
    format,
    join,
    length,
    lower,
    reduce_join,
    regex_full_match,
    regex_replace,
    split,
    strip,
    substr,
    to_hash_bucket,
    to_hash_bucket_fast,
    to_hash_bucket_strong,
    to_number,
    unicode_decode,
    unicode_decode_with_offsets,
    unicode_encode,
    unicode_split,
    upper,
)

__all__ = ["as_string", "bytes_split", "format", "join", "length", "lower", "ngrams",
           "reduce_join", "regex_full_match", "regex_replace", "split", "strip", "substr",
           "to_hash_bucket", "to_hash_bucket_fast", "to_hash_bucket_strong", "to_number",
           "unicode_decode", "unicode_decode_with_offsets", "unicode_encode", "unicode_script",
           "unicode_split",
           "unicode_split_with_offsets", "unicode_transcode", "unsorted_segment_join", "upper"]

from tapeflow.ops import lookup_ops as _lookup_ops  # noqa: E402
from tapeflow.strings import cross as _cross  # noqa: E402, F401  (tf.sparse/ragged.cross)
from tapeflow.strings import hashing as _hashing  # noqa: E402

_lookup_ops.fingerprint64 = _hashing.fingerprint64  # hash-table OOV buckets (ops/, below)

from tapeflow._api import export as _export  # noqa: E402

_export("as_string")(as_string)  # tf.as_string is tf.strings.as_string
