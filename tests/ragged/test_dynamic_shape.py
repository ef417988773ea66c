"""tf.shape of a RaggedTensor is a DynamicRaggedShape, as in TF 2.21 (its printed forms below
are TF 2.21's, from /work/tfenv: `repr(tf.shape(rt))`)."""

import pytest

import tapeflow as tf


def test_ragged_shape_matches_tensorflow():
    rt = tf.ragged.constant([[1, 2], [3]])
    s = tf.shape(rt)
    assert repr(s) == "<DynamicRaggedShape lengths=[2, (2, 1)] num_row_partitions=1>"
    assert isinstance(s, tf.experimental.DynamicRaggedShape)
    assert int(s[0]) == 2 and s[0].dtype == tf.int32
    assert s.rank == 2 and s.num_row_partitions == 1
    assert s.inner_shape.numpy().tolist() == [3]
    assert s.row_partitions[0].row_splits().numpy().tolist() == [0, 2, 3]
    with pytest.raises(ValueError, match="Index 1 is not uniform"):
        s[1]


def test_uniform_inner_dims_and_dense_tensors():
    r3 = tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1)
    s3 = tf.shape(r3, out_type=tf.int64)
    assert repr(s3) == "<DynamicRaggedShape lengths=[2, (2, 1), 2] num_row_partitions=1>"
    assert int(s3[2]) == 2 and int(s3[-1]) == 2 and s3.dtype == tf.int64
    dense = tf.experimental.DynamicRaggedShape.from_tensor(tf.zeros([2, 3]))
    assert repr(dense) == "<DynamicRaggedShape lengths=[2, 3] num_row_partitions=0>"


def test_batch_size_of_a_ragged_argument_traced():
    @tf.function(input_signature=[tf.RaggedTensorSpec([None, None], tf.int32)])
    def batch(rt):
        return tf.shape(rt)[0] * 10

    assert int(batch(tf.ragged.constant([[1, 2], [3], []]))) == 30
