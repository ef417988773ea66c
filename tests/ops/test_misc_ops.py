"""Root-level helpers and tf.nn composites: forward vs NumPy/TF semantics, gradients."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import OpCase, op_table_tests

CASES = [
    OpCase("silu", tf.nn.silu, lambda x: x / (1 + np.exp(-x)),
           lambda rng: [rng.standard_normal((3, 4))]),
    OpCase("l2_loss", tf.nn.l2_loss, lambda x: (x * x).sum() / 2,
           lambda rng: [rng.standard_normal((3, 4))]),
    OpCase("crelu", tf.nn.crelu, lambda x: np.concatenate([np.maximum(x, 0),
                                                           np.maximum(-x, 0)], -1),
           lambda rng: [rng.standard_normal((3, 4)) + 0.1]),
    OpCase("weighted_xent", lambda z, x: tf.nn.weighted_cross_entropy_with_logits(z, x, 2.5),
           lambda z, x: -(2.5 * z * np.log(1 / (1 + np.exp(-x))) +
                          (1 - z) * np.log(1 - 1 / (1 + np.exp(-x)))),
           lambda rng: [rng.random((3, 4)), rng.standard_normal((3, 4))]),
    OpCase("depth_to_space", lambda x: tf.nn.depth_to_space(x, 2),
           lambda x: x.reshape(1, 2, 2, 2, 2, 1).transpose(0, 1, 3, 2, 4, 5).reshape(1, 4, 4, 1),
           lambda rng: [rng.standard_normal((1, 2, 2, 4))]),
    OpCase("space_to_depth", lambda x: tf.nn.space_to_depth(x, 2),
           lambda x: x.reshape(1, 2, 2, 2, 2, 1).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 2, 4),
           lambda rng: [rng.standard_normal((1, 4, 4, 1))]),
    OpCase("reverse_sequence", lambda x: tf.reverse_sequence(x, [2, 3], seq_axis=1),
           lambda x: np.stack([np.concatenate([x[0, :2][::-1], x[0, 2:]]), x[1, :3][::-1]]),
           lambda rng: [rng.standard_normal((2, 3))]),
    OpCase("truncatediv", lambda x: tf.truncatediv(x, 2.0), lambda x: np.trunc(x / 2.0),
           lambda rng: [rng.standard_normal(5) * 5], grad=False),
]

test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = op_table_tests(CASES)


def test_masks_unique_search_grids():
    assert tf.sequence_mask([1, 3], 4).numpy().tolist() == [[True, False, False, False],
                                                            [True, True, True, False]]
    assert tf.sequence_mask([2, 1], dtype=tf.float32).numpy().tolist() == [[1, 1], [1, 0]]
    y, idx = tf.unique([3, 1, 3, 2, 1])
    assert y.numpy().tolist() == [3, 1, 2] and idx.numpy().tolist() == [0, 1, 0, 2, 1]
    _, _, counts = tf.unique_with_counts([3, 1, 3])
    assert counts.numpy().tolist() == [2, 1]
    assert tf.searchsorted([1, 3, 5], [0, 3, 6]).numpy().tolist() == [0, 1, 3]
    assert tf.searchsorted([1, 3, 5], [3], side="right").numpy().tolist() == [2]
    gx, gy = tf.meshgrid([1, 2, 3], [4, 5])
    want_x, want_y = np.meshgrid([1, 2, 3], [4, 5])
    assert gx.numpy().tolist() == want_x.tolist() and gy.numpy().tolist() == want_y.tolist()
    ix, _ = tf.meshgrid([1, 2, 3], [4, 5], indexing="ij")
    assert ix.shape == (3, 2)
    assert tf.unravel_index([5, 7], [3, 4]).numpy().tolist() == [[1, 1], [1, 3]]
    parts = tf.dynamic_partition([10, 20, 30, 40], [0, 1, 0, 1], 2)
    assert [p.numpy().tolist() for p in parts] == [[10, 30], [20, 40]]
    stitched = tf.dynamic_stitch([[0, 2], [1, 3]], [[10, 30], [20, 40]])
    assert stitched.numpy().tolist() == [10, 20, 30, 40]
    assert tf.histogram_fixed_width([0.0, 0.1, 0.6, 5.0], [0.0, 1.0], nbins=2).numpy().tolist() \
        == [2, 2]


def test_static_helpers():
    assert tf.get_static_value(tf.constant([1, 2])).tolist() == [1, 2]
    assert tf.broadcast_static_shape(tf.TensorShape([2, 1]), tf.TensorShape([3])) == [2, 3]
    assert tf.broadcast_dynamic_shape([2, 1], [3]).numpy().tolist() == [2, 3]
    assert tf.type_spec_from_value(tf.ones([2])) == tf.TensorSpec([2], tf.float32)
    assert isinstance(tf.type_spec_from_value(tf.ragged.constant([[1]])), tf.RaggedTensorSpec)
    with pytest.raises(ValueError, match="not compatible"):
        tf.ensure_shape(tf.ones([2, 3]), [None, 4])
    seen = []
    tf.function(lambda: seen.append((tf.inside_function(), tf.is_symbolic_tensor(
        tf.constant(1) + 1))))()
    assert seen == [(True, True)] and not tf.inside_function()
    assert float(tf.truncatemod(-7.0, 3.0)) == -1.0
    assert float(tf.timestamp()) > 1.6e9
