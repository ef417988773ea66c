"""tf.SparseTensor / tf.sparse: forward vs dense NumPy, gradients, eager vs tf.function."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import check_grads

DENSE = np.array([[0, 7.0, 0], [0, 0, 0], [1.0, 2.0, 0]], np.float32)
IDX = [[0, 1], [2, 0], [2, 1]]


def sp():
    return tf.sparse.from_dense(DENSE)


def dense(x):
    return tf.sparse.to_dense(x).numpy()


def test_from_dense_to_dense_round_trip():
    s = sp()
    assert s.indices.numpy().tolist() == IDX
    np.testing.assert_array_equal(s.values.numpy(), [7, 1, 2])
    assert s.shape.as_list() == [3, 3] and s.dtype == tf.float32
    np.testing.assert_array_equal(dense(s), DENSE)
    np.testing.assert_array_equal(tf.sparse.to_dense(s, default_value=-1.0).numpy(),
                                  np.where(DENSE == 0, -1, DENSE))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        tf.sparse.to_dense(tf.SparseTensor([[5, 0]], [1.0], [3, 3]))


def test_structure_ops_match_dense():
    s = sp()
    np.testing.assert_array_equal(dense(tf.sparse.add(s, s)), DENSE * 2)
    np.testing.assert_array_equal(tf.sparse.add(s, tf.ones([3, 3])).numpy(), DENSE + 1)
    np.testing.assert_array_equal(dense(tf.sparse.concat(1, [s, s])),
                                  np.concatenate([DENSE, DENSE], 1))
    np.testing.assert_array_equal(dense(tf.sparse.concat(0, [s, s])),
                                  np.concatenate([DENSE, DENSE], 0))
    np.testing.assert_array_equal(dense(tf.sparse.slice(s, [1, 0], [2, 2])), DENSE[1:3, 0:2])
    np.testing.assert_array_equal(dense(tf.sparse.reshape(s, [9, -1])), DENSE.reshape(9, 1))
    np.testing.assert_array_equal(dense(tf.sparse.transpose(s)), DENSE.T)
    shuffled = tf.SparseTensor([[2, 1], [0, 1], [2, 0]], [2.0, 7.0, 1.0], [3, 3])
    assert tf.sparse.reorder(shuffled).indices.numpy().tolist() == IDX
    kept = tf.sparse.retain(s, [True, False, True])
    np.testing.assert_array_equal(dense(kept), np.where(DENSE == 1, 0, DENSE))
    np.testing.assert_array_equal(dense(s * tf.constant([1.0, 10.0, 100.0])),
                                  DENSE * [1, 10, 100])
    np.testing.assert_array_equal(dense(s / 2.0), DENSE / 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="right-ragged"):  # as TF 2.21
        tf.RaggedTensor.from_sparse(s)  # row 0 has column 1 but no column 0
    ind = tf.sparse.to_indicator(tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 3, 2], [2, 2]), 4)
    assert ind.numpy().tolist() == [[False, True, False, True], [False, False, True, False]]
    filled, empty = tf.sparse.fill_empty_rows(s, -1.0)
    assert empty.numpy().tolist() == [False, True, False]
    assert dense(filled)[1].tolist() == [-1, 0, 0]


def test_reductions_ignore_implicit_zeros_like_tf():
    # values recorded from TensorFlow 2.21 (tf.sparse.reduce_max skips implicit zeros)
    s = tf.SparseTensor([[0, 0], [0, 2], [2, 1]], [-1.0, -2.0, 3.0], [3, 3])
    assert tf.sparse.reduce_max(s, 1).numpy().tolist() == [-1.0, 0.0, 3.0]
    assert tf.sparse.reduce_max(s, 0).numpy().tolist() == [-1.0, 3.0, -2.0]
    assert float(tf.sparse.reduce_max(s)) == 3.0
    assert tf.sparse.reduce_sum(s, 1, keepdims=True).numpy().tolist() == [[-3.0], [0.0], [3.0]]
    out = tf.sparse.reduce_max(s, 1, output_is_sparse=True)
    assert out.indices.numpy().tolist() == [[0], [2]]
    a = tf.SparseTensor([[0, 0], [1, 1]], [1.0, 2.0], [2, 2])
    b = tf.SparseTensor([[0, 0], [0, 1]], [1.0, -1.0], [2, 2])
    summed = tf.sparse.add(a, b, threshold=1.5)
    assert summed.indices.numpy().tolist() == [[0, 0], [0, 1], [1, 1]]


def test_sparse_dense_matmul_and_segments():
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(tf.sparse.sparse_dense_matmul(sp(), b).numpy(), DENSE @ b)
    np.testing.assert_allclose(tf.sparse.sparse_dense_matmul(sp(), b.T, adjoint_b=True).numpy(),
                               DENSE @ b)
    np.testing.assert_allclose(tf.sparse.sparse_dense_matmul(sp(), b, adjoint_a=True).numpy(),
                               DENSE.T @ b)
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    got = tf.sparse.segment_sum(data, [0, 2, 3], [0, 0, 1]).numpy()
    np.testing.assert_array_equal(got, [data[0] + data[2], data[3]])
    np.testing.assert_allclose(tf.sparse.segment_mean(data, [0, 2, 3], [0, 0, 1]).numpy(),
                               [(data[0] + data[2]) / 2, data[3]])


@pytest.mark.parametrize("fn", [
    lambda v, b: tf.sparse.sparse_dense_matmul(tf.SparseTensor(IDX, v, [3, 3]), b),
    lambda v, b: tf.sparse.sparse_dense_matmul(tf.SparseTensor(IDX, v, [3, 3]), b,
                                               adjoint_a=True),
    lambda v, b: tf.sparse.to_dense(tf.SparseTensor(IDX, v, [3, 3])) * b[:, :1],
    lambda v, b: tf.sparse.reduce_sum(tf.SparseTensor(IDX, v, [3, 3]), 1) + b[:, 0],
    lambda v, b: tf.sparse.reduce_max(tf.SparseTensor(IDX, v, [3, 3]), 0) * b[:, 1],
    lambda v, b: tf.sparse.to_dense(tf.sparse.add(tf.SparseTensor(IDX, v, [3, 3]),
                                                  tf.SparseTensor(IDX[:1], v[:1], [3, 3]))),
])
def test_gradients_match_finite_differences(fn):
    check_grads(fn, [np.array([0.5, -1.5, 2.0]), np.arange(6.0).reshape(3, 2) / 3])


@pytest.mark.parametrize("fn", [
    lambda s: tf.sparse.reduce_sum(s, 1),
    lambda s: tf.sparse.to_dense(s * 3.0),
    lambda s: tf.sparse.to_dense(tf.sparse.concat(0, [s, s])),
    lambda s: tf.sparse.sparse_dense_matmul(s, tf.ones([3, 2])),
    lambda s: s,
])
def test_traced_matches_eager(fn):
    eager = fn(sp())
    traced = tf.function(fn)(sp())
    if isinstance(eager, tf.SparseTensor):
        np.testing.assert_array_equal(dense(traced), dense(eager))
    else:
        np.testing.assert_allclose(traced.numpy(), eager.numpy())


def test_sparse_spec_in_input_signature():
    f = tf.function(lambda s: tf.sparse.reduce_sum(s, 0),
                    input_signature=[tf.SparseTensorSpec([None, 3], tf.float32)])
    np.testing.assert_allclose(f(sp()).numpy(), DENSE.sum(0))
    other = tf.SparseTensor([[0, 0]], [4.0], [5, 3])
    np.testing.assert_allclose(f(other).numpy(), [4, 0, 0])
    assert f.experimental_get_tracing_count() == 1
