"""Array ops, one row each: forward vs NumPy, gradients vs finite differences, torch, graph;
plus hypothesis properties for broadcasting and slicing against NumPy."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapeflow as tf
from tapeflow import testing
from tapeflow.testing import OpCase


def normal(*shapes):
    return lambda rng: [rng.standard_normal(s) for s in shapes]


def take_rows(a, idx):
    return a[idx]


CASES = [
    OpCase("reshape", lambda x: tf.reshape(x, [3, -1]), lambda x: x.reshape(3, -1),
           normal((2, 3, 2)), lambda a: a.reshape(3, -1), order=2),
    OpCase("transpose", lambda x: tf.transpose(x, [2, 0, 1]),
           lambda x: x.transpose(2, 0, 1), normal((2, 3, 4)), lambda a: a.permute(2, 0, 1)),
    OpCase("concat", lambda a, b: tf.concat([a, b, a], 1), lambda a, b: np.concatenate(
        [a, b, a], 1), normal((2, 1), (2, 3)), lambda a, b: torch_cat([a, b, a], 1), order=2),
    OpCase("concat_channels", lambda a, b: tf.concat([a, b], -1), lambda a, b: np.concatenate(
        [a, b], -1), normal((2, 3, 2, 5), (2, 3, 2, 3)), lambda a, b: torch_cat([a, b], -1)),
    OpCase("split_sizes", lambda x: tf.split(x, [1, -1, 2], axis=1),
           lambda x: np.split(x, [1, 3], axis=1), normal((2, 5)),
           lambda a: a.split([1, 2, 2], 1)),
    OpCase("split_count", lambda x: tf.split(x, 2), lambda x: np.split(x, 2), normal((4, 2))),
    OpCase("stack", lambda a, b: tf.stack([a, b], axis=1), lambda a, b: np.stack([a, b], 1),
           normal((2, 3), (2, 3)), lambda a, b: torch_stack([a, b], 1)),
    OpCase("unstack", lambda x: tf.unstack(x, axis=1), lambda x: list(np.moveaxis(x, 1, 0)),
           normal((2, 3))),
    OpCase("tile", lambda x: tf.tile(x, [2, 3]), lambda x: np.tile(x, (2, 3)), normal((2, 2)),
           lambda a: a.repeat(2, 3), order=2),
    OpCase("pad_constant", lambda x: tf.pad(x, [[1, 0], [2, 1]], constant_values=3.0),
           lambda x: np.pad(x, [(1, 0), (2, 1)], constant_values=3.0), normal((2, 3)),
           lambda a: torch_pad(a, (2, 1, 1, 0), "constant", 3.0), order=2),
    OpCase("pad_reflect", lambda x: tf.pad(x, [[1, 1], [2, 2]], "REFLECT"),
           lambda x: np.pad(x, [(1, 1), (2, 2)], "reflect"), normal((2, 3)),
           lambda a: torch_pad(a[None], (2, 2, 1, 1), "reflect")[0], order=2),
    OpCase("pad_symmetric", lambda x: tf.pad(x, [[2, 1], [0, 3]], "SYMMETRIC"),
           lambda x: np.pad(x, [(2, 1), (0, 3)], "symmetric"), normal((2, 3))),
    OpCase("gather", lambda x: tf.gather(x, [2, 0, 2]), lambda x: x[[2, 0, 2]],
           normal((3, 2)), lambda a: a[[2, 0, 2]], order=2),
    OpCase("gather_axis1", lambda x, i: tf.gather(x, i, axis=1), lambda x, i: x[:, i],
           lambda rng: [rng.standard_normal((2, 4)), np.array([[3, 1], [1, 1]])],
           lambda a, i: a[:, i]),
    OpCase("gather_nd", lambda x: tf.gather_nd(x, [[0, 1], [2, 0], [0, 1]]),
           lambda x: x[[0, 2, 0], [1, 0, 1]], normal((3, 2, 2)),
           lambda a: a[[0, 2, 0], [1, 0, 1]], order=2),
    OpCase("gather_nd_batch_dims", lambda x: tf.gather_nd(x, [[[0, 1]], [[2, 3]]], batch_dims=1),
           lambda x: x[[0, 1], [0, 2], [1, 3]].reshape(2, 1), normal((2, 3, 4)),
           lambda a: a[[0, 1], [0, 2], [1, 3]].reshape(2, 1), order=2),
    OpCase("gather_nd_batch_dims_slices", lambda x: tf.gather_nd(x, [[1], [0]], batch_dims=1),
           lambda x: x[[0, 1], [1, 0]], normal((2, 3, 4)), lambda a: a[[0, 1], [1, 0]]),
    OpCase("getitem_basic", lambda x: x[1:, ::-2, 1], lambda x: x[1:, ::-2, 1],
           normal((3, 4, 2)), lambda a: a[1:].flip(1)[:, ::2, 1], order=2),
    OpCase("getitem_ellipsis_newaxis", lambda x: x[..., None, -1], lambda x: x[..., None, -1],
           normal((2, 3)), lambda a: a[..., None, -1]),
    OpCase("getitem_tensor_index", lambda x: x[:, tf.constant([2, 0])],
           lambda x: x[:, [2, 0]], normal((2, 3)), lambda a: a[:, [2, 0]]),
    OpCase("getitem_bool_mask", lambda x: x[x > 0], lambda x: x[x > 0], normal((3, 3)),
           lambda a: a[a > 0]),
    OpCase("strided_slice", lambda x: tf.strided_slice(x, [0, 3], [2, 0], [1, -2],
                                                       shrink_axis_mask=0),
           lambda x: x[0:2, 3:0:-2], normal((3, 5))),
    OpCase("slice", lambda x: tf.slice(x, [1, 0], [-1, 2]), lambda x: x[1:, 0:2],
           normal((3, 4))),
    OpCase("expand_dims", lambda x: tf.expand_dims(x, -1), lambda x: x[..., None],
           normal((2, 3)), lambda a: a.unsqueeze(-1)),
    OpCase("squeeze", lambda x: tf.squeeze(x, [0, 2]), lambda x: x.squeeze((0, 2)),
           normal((1, 3, 1, 1)), lambda a: a.squeeze(2).squeeze(0)),
    OpCase("broadcast_to", lambda x: tf.broadcast_to(x, [2, 3, 3]),
           lambda x: np.broadcast_to(x, (2, 3, 3)), normal((3, 1)),
           lambda a: a.expand(2, 3, 3), order=2),
    OpCase("reverse", lambda x: tf.reverse(x, [0, -1]), lambda x: x[::-1, ::-1],
           normal((2, 3)), lambda a: a.flip(0, 1)),
    OpCase("sort", lambda x: tf.sort(x, direction="DESCENDING"), lambda x: -np.sort(-x, -1),
           normal((2, 4)), lambda a: a.sort(-1, descending=True).values),
    OpCase("top_k", lambda x: tf.math.top_k(x, 2).values, lambda x: -np.sort(-x, -1)[:, :2],
           normal((3, 5)), lambda a: a.topk(2).values),
    OpCase("boolean_mask", lambda x: tf.boolean_mask(x, MASK), lambda x: x[MASK],
           normal((3, 2)), lambda a: a[torch_tensor(MASK)]),
    OpCase("identity", tf.identity, lambda x: x, normal((2,)), lambda a: a * 1),
]

MASK = np.array([True, False, True])


def torch_cat(xs, axis):
    import torch

    return torch.cat(xs, axis)


def torch_stack(xs, axis):
    import torch

    return torch.stack(xs, axis)


def torch_pad(a, pads, mode, value=0.0):
    import torch.nn.functional as F

    return F.pad(a, pads, mode=mode, value=value) if mode == "constant" else F.pad(
        a, pads, mode=mode)


def torch_tensor(a):
    import torch

    return torch.tensor(a)


test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = \
    testing.op_table_tests(CASES)


# --- creation ops and integer outputs ---------------------------------------------------------


def test_range_follows_tf_dtype_rules():
    assert tf.range(5).dtype == tf.int32
    np.testing.assert_array_equal(tf.range(5).numpy(), np.arange(5))
    r = tf.range(1.0, 2.0, 0.25)
    assert r.dtype == tf.float32
    np.testing.assert_allclose(r.numpy(), [1.0, 1.25, 1.5, 1.75])
    np.testing.assert_array_equal(tf.range(10, 0, -3).numpy(), [10, 7, 4, 1])
    assert tf.range(3, dtype=tf.float64).dtype == tf.float64
    assert tf.range(tf.constant(4, tf.int64)).dtype == tf.int64


def test_linspace_eye_one_hot():
    np.testing.assert_allclose(tf.linspace(0.0, 1.0, 5).numpy(), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(tf.eye(2, 3).numpy(), np.eye(2, 3))
    batched = tf.eye(2, 3, batch_shape=[2, 1], dtype=tf.int32)
    assert batched.shape == (2, 1, 2, 3) and batched.dtype == tf.int32
    np.testing.assert_array_equal(batched.numpy(), np.broadcast_to(np.eye(2, 3), (2, 1, 2, 3)))
    traced = tf.function(lambda: tf.eye(3, batch_shape=tf.constant([4])))()
    np.testing.assert_array_equal(traced.numpy(), np.broadcast_to(np.eye(3), (4, 3, 3)))
    oh = tf.one_hot([0, 2, -1], 3)
    assert oh.dtype == tf.float32
    np.testing.assert_array_equal(oh.numpy(), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    oh_axis0 = tf.one_hot(tf.constant([1, 0]), 2, on_value=5, off_value=-1, axis=0)
    assert oh_axis0.dtype == tf.int32
    np.testing.assert_array_equal(oh_axis0.numpy(), [[-1, 5], [5, -1]])


def test_shape_size_rank_are_int32_tensors():
    x = tf.zeros([2, 3, 4])
    for t, want in ((tf.shape(x), [2, 3, 4]), (tf.size(x), 24), (tf.rank(x), 3)):
        assert t.dtype == tf.int32
        np.testing.assert_array_equal(t.numpy(), want)
    assert tf.shape(x, out_type=tf.int64).dtype == tf.int64


def test_reshape_accepts_shape_tensor():
    x = tf.reshape(tf.range(6), tf.constant([3, 2]))
    assert x.shape == (3, 2)
    assert tf.reshape(x, tf.shape(tf.zeros([2, 3]))).shape == (2, 3)


def test_top_k_returns_values_and_int32_indices_lowest_index_first_on_ties():
    values, indices = tf.math.top_k(tf.constant([1.0, 3.0, 3.0, 2.0]), k=3)
    np.testing.assert_array_equal(values.numpy(), [3.0, 3.0, 2.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 2, 3])
    assert indices.dtype == tf.int32


def test_argsort():
    x = tf.constant([3, 1, 2, 1])
    np.testing.assert_array_equal(tf.argsort(x).numpy(), [1, 3, 2, 0])
    np.testing.assert_array_equal(tf.argsort(x, direction="DESCENDING").numpy(), [0, 2, 1, 3])


def test_newaxis_is_none():
    assert tf.newaxis is None
    assert tf.zeros([2])[tf.newaxis].shape == (1, 2)


def test_getitem_on_variable_is_differentiable():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        y = v[1, 0] * 2.0
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [[0, 0], [2, 0]])


# --- errors -----------------------------------------------------------------------------------


def test_out_of_range_index_names_the_op():
    with pytest.raises(tf.errors.InvalidArgumentError, match="StridedSlice"):
        tf.zeros([2, 3])[5]


def test_gather_nd_batch_dims_in_a_graph_with_unknown_dims_and_bad_batch_dims():
    params = np.arange(2 * 3 * 2 * 4.0).reshape(2, 3, 2, 4)
    indices = np.array([[[1, 0], [2, 1], [0, 0]], [[0, 1], [0, 1], [2, 0]]])  # [2, 3, 2]
    expect = np.stack([params[b, indices[b, :, 0], indices[b, :, 1]] for b in range(2)])
    fn = tf.function(lambda p, i: tf.gather_nd(p, i, batch_dims=1),
                     input_signature=[tf.TensorSpec([None, 3, 2, None], tf.float64),
                                      tf.TensorSpec([None, None, 2], tf.int64)])
    np.testing.assert_array_equal(fn(params, indices).numpy(), expect)
    np.testing.assert_array_equal(tf.gather_nd(params, indices, batch_dims=1).numpy(), expect)
    # batch_dims=2: one index tuple per (b, r) pair into params[b, r]
    two = tf.gather_nd(params, indices[:, :, :1] % 2, batch_dims=2).numpy()
    np.testing.assert_array_equal(two, params[np.arange(2)[:, None], np.arange(3),
                                              indices[:, :, 0] % 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="GatherNd.*batch_dims=3"):
        tf.gather_nd(params, indices, batch_dims=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="GatherNd.*first 1 dims"):
        tf.gather_nd(params, indices[:1].repeat(3, 0), batch_dims=1)


def test_too_many_indices():
    with pytest.raises(tf.errors.InvalidArgumentError, match="too many indices"):
        tf.zeros([2])[0, 0]


def test_bad_split_and_squeeze_and_pad():
    with pytest.raises(tf.errors.InvalidArgumentError, match="SplitV.*not evenly"):
        tf.split(tf.zeros([5]), 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Squeeze.*dim\\[1\\]"):
        tf.squeeze(tf.zeros([1, 2]), 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="PadV2.*REFLECT"):
        tf.pad(tf.zeros([2]), [[2, 0]], "REFLECT")
    with pytest.raises(tf.errors.InvalidArgumentError, match="ConcatV2.*dtype"):
        tf.concat([tf.zeros([1]), tf.zeros([1], tf.int32)], 0)


# --- properties against NumPy -----------------------------------------------------------------


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), st.data())
def test_broadcasting_matches_numpy(shapes, data):
    a = data.draw(hnp.arrays(np.float32, shapes.input_shapes[0],
                             elements=st.floats(-10, 10, width=32)))
    b = data.draw(hnp.arrays(np.float32, shapes.input_shapes[1],
                             elements=st.floats(-10, 10, width=32)))
    ta, tb = tf.constant(a), tf.constant(b)
    for ours, ref in ((ta + tb, a + b), (ta * tb, a * b), (tf.maximum(ta, tb), np.maximum(a, b)),
                      (ta < tb, a < b)):
        assert ours.shape == ref.shape
        np.testing.assert_array_equal(ours.numpy(), ref)
    with tf.GradientTape() as tape:
        tape.watch([ta, tb])
        y = tf.reduce_sum(ta * tb)
    ga, gb = tape.gradient(y, [ta, tb])
    assert ga.shape == a.shape and gb.shape == b.shape
    np.testing.assert_allclose(ga.numpy(), np.sum(np.broadcast_to(b, shapes.result_shape),
                                                  axis=_broadcast_axes(a.shape, shapes.result_shape)
                                                  ).reshape(a.shape), rtol=1e-5, atol=1e-5)


def _broadcast_axes(shape, result):
    extra = len(result) - len(shape)
    return tuple(range(extra)) + tuple(i + extra for i, d in enumerate(shape)
                                       if d == 1 and result[i + extra] != 1)


@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                  elements=st.floats(-10, 10, width=32)).flatmap(
    lambda a: st.tuples(st.just(a), hnp.basic_indices(a.shape, allow_newaxis=True))))
def test_basic_slicing_matches_numpy(case):
    array, index = case
    t = tf.constant(array)
    np.testing.assert_array_equal(t[index].numpy(), array[index])
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = tf.reduce_sum(t[index])
    want = np.zeros_like(array)
    want[index] += 1  # basic indices never repeat an element
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), want)


@pytest.mark.parametrize("compiled", [True, False])
def test_channel_concat_kernel_matches_numpy(compiled, monkeypatch):
    from tapeflow.kernels import concat as concat_kernel

    if not compiled:
        monkeypatch.setattr(concat_kernel, "_concat_rows2_nb", None)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 3, 7)).astype(np.float32)
    wide = rng.standard_normal((2, 4, 3, 9)).astype(np.float32)
    for b in (wide[..., :2], np.ascontiguousarray(wide[..., 3:5])):  # a view, then a copy
        np.testing.assert_array_equal(concat_kernel.concat((a, b), 3),
                                      np.concatenate([a, b], 3))
