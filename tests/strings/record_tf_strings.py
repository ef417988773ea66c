"""Prints the TensorFlow 2.21 values test_strings.py checks.

    /work/tfenv/bin/python tests/strings/record_tf_strings.py
"""

import tensorflow as tf

S = tf.constant(["Hello World", "  a b  ", "", "h\u00e9llo"])
WORDS = ["hello", "", "world", "TensorFlow", "a" * 100, "\u00e9t\u00e9"]
GRID = [["a", "b"], ["c", "d"]]
CASES = {
    "split": lambda: tf.strings.split(S),
    "split sep": lambda: tf.strings.split(S, " "),
    "split maxsplit": lambda: tf.strings.split(tf.constant("a,b,,c"), ",", maxsplit=2),
    "split 2-d": lambda: tf.strings.split(tf.constant([["a b", "c"], ["d", "e f g"]])),
    "length": lambda: tf.strings.length(S),
    "length utf8": lambda: tf.strings.length(S, unit="UTF8_CHAR"),
    "lower": lambda: tf.strings.lower(S),
    "upper": lambda: tf.strings.upper(S),
    "strip": lambda: tf.strings.strip(S),
    "substr": lambda: tf.strings.substr(S[:2], 1, 3),
    "substr utf8": lambda: tf.strings.substr(S[3:], 1, 3, unit="UTF8_CHAR"),
    "join": lambda: tf.strings.join([S, "x"], separator="-"),
    "reduce_join": lambda: tf.strings.reduce_join(S, separator="|"),
    "reduce_join axis 1": lambda: tf.strings.reduce_join(GRID, axis=1),
    "reduce_join keepdims": lambda: tf.strings.reduce_join(GRID, axis=0, keepdims=True),
    "regex_full_match": lambda: tf.strings.regex_full_match(S, "H.*d"),
    "regex_replace": lambda: tf.strings.regex_replace(S, "l+", "L"),
    "regex_replace once": lambda: tf.strings.regex_replace(S, "(o)", r"<\1>",
                                                           replace_global=False),
    "to_number": lambda: tf.strings.to_number(["1.5", "-2"]),
    "as_string float": lambda: tf.strings.as_string([1.5, 2.0]),
    "as_string int": lambda: tf.strings.as_string([3, 4]),
    "as_string bool": lambda: tf.strings.as_string([True]),
    "as_string precision": lambda: tf.strings.as_string([3.14159], precision=2),
    "as_string scientific": lambda: tf.strings.as_string([1234.5], scientific=True),
    "as_string shortest": lambda: tf.strings.as_string([0.1], shortest=True),
    "as_string width": lambda: tf.strings.as_string([7], width=4, fill="0"),
    "format": lambda: tf.strings.format("x={} y={}", [tf.constant([1, 2]), tf.constant("s")]),
    "unicode_decode": lambda: tf.strings.unicode_decode(S, "UTF-8"),
    "unicode_split": lambda: tf.strings.unicode_split(S, "UTF-8"),
    "unicode_encode": lambda: tf.strings.unicode_encode(tf.ragged.constant([[104, 233], [97]]),
                                                        "UTF-8"),
    "bytes_split": lambda: tf.strings.bytes_split("h\u00e9"),
    "decode offsets": lambda: tf.strings.unicode_decode_with_offsets(["h\u00e9y"], "UTF-8"),
    "hash fast 2**62": lambda: tf.strings.to_hash_bucket_fast(WORDS, 2**62),
    "hash fast": lambda: tf.strings.to_hash_bucket_fast(WORDS, 1000),
    "hash legacy": lambda: tf.strings.to_hash_bucket(WORDS, 1000),
    "hash strong": lambda: tf.strings.to_hash_bucket_strong(WORDS, 1000, [1, 2]),
}

for name, case in CASES.items():
    print(f"{name}: {case()}")
