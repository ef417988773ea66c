"""``tf.strings``: ops on string tensors (see strings/ops.py; hashes in strings/hashing.py)."""

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

__all__ = ["as_string", "bytes_split", "format", "join", "length", "lower", "reduce_join",
           "regex_full_match", "regex_replace", "split", "strip", "substr", "to_hash_bucket",
           "to_hash_bucket_fast", "to_hash_bucket_strong", "to_number", "unicode_decode",
           "unicode_decode_with_offsets", "unicode_encode", "unicode_split", "upper"]
