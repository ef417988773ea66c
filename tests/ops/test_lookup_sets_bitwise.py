"""tf.lookup tables (ids recorded from TensorFlow 2.21), tf.sets, tf.bitwise."""

import numpy as np

import tapeflow as tf


def test_static_hash_table_and_vocabulary_match_tensorflow(tmp_path):
    init = tf.lookup.KeyValueTensorInitializer(["a", "b", "c"], [7, 8, 9], value_dtype=tf.int64)
    table = tf.lookup.StaticHashTable(init, -1)
    assert table.lookup(tf.constant(["b", "z", "a"])).numpy().tolist() == [8, -1, 7]
    assert int(table.size()) == 3
    vocab = tf.lookup.StaticVocabularyTable(
        tf.lookup.KeyValueTensorInitializer(["a", "b"], [0, 1], value_dtype=tf.int64), 5)
    # out-of-vocabulary ids recorded from TF 2.21 (Fingerprint64 buckets)
    assert vocab.lookup(tf.constant(["a", "hello", "world", "b"])).numpy().tolist() == [0, 3, 5,
                                                                                        1]
    assert vocab.lookup(tf.ragged.constant([["a"], ["zz", "b"]])).to_list() == [[0], [4, 1]]
    path = tmp_path / "v.txt"
    path.write_text("cat\ndog\nbird\n")
    text = tf.lookup.TextFileInitializer(str(path), tf.string,
                                         tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                                         tf.lookup.TextFileIndex.LINE_NUMBER)
    words = tf.lookup.StaticHashTable(text, -1)
    assert words.lookup(tf.constant(["dog", "x"])).numpy().tolist() == [1, -1]
    f = tf.function(lambda s: words.lookup(tf.strings.split(s)))
    assert f(tf.constant("bird cat fish")).numpy().tolist() == [2, 0, -1]
    ds = tf.data.Dataset.from_tensor_slices(["cat", "owl"]).map(words.lookup)
    assert list(ds.as_numpy_iterator()) == [0, -1]


def test_sets_and_bitwise():
    a = tf.constant([[1, 2, 3], [4, 5, 6]])
    b = tf.constant([[2, 3, 9], [6, 7, 4]])
    inter = tf.sparse.to_dense(tf.sets.intersection(a, b)).numpy().tolist()
    assert inter == [[2, 3], [4, 6]]
    uni = tf.sets.union(a, b)
    assert tf.sparse.to_dense(uni).numpy().tolist() == [[1, 2, 3, 9], [4, 5, 6, 7]]
    diff = tf.sparse.to_dense(tf.sets.difference(a, b)).numpy().tolist()
    assert diff == [[1], [5]]
    assert tf.sets.size(uni).numpy().tolist() == [4, 4]
    x, y = np.array([12, 5], np.int32), np.array([10, 3], np.int32)
    assert tf.bitwise.bitwise_and(x, y).numpy().tolist() == (x & y).tolist()
    assert tf.bitwise.bitwise_or(x, y).numpy().tolist() == (x | y).tolist()
    assert tf.bitwise.bitwise_xor(x, y).numpy().tolist() == (x ^ y).tolist()
    assert tf.bitwise.left_shift(x, 1).numpy().tolist() == (x << 1).tolist()
    assert tf.bitwise.right_shift(x, 1).numpy().tolist() == (x >> 1).tolist()
    assert tf.bitwise.invert(x).numpy().tolist() == (~x).tolist()
