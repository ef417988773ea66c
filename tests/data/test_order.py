"""Element orders, shapes and counts of the synchronous transformations, as TF documents them."""

import collections

import numpy as np
import pytest

from tapeflow.data import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, Options
from tapeflow.framework import dtypes, errors
from tapeflow.framework.tensor import EagerTensor
from tapeflow.framework.tensor_spec import TensorSpec


def values(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds.as_numpy_iterator()]


@pytest.mark.parametrize("parallel", [None, 2])
def test_interleave_doc_order_repeat_x(parallel):
    ds = Dataset.range(1, 4).interleave(lambda x: Dataset.from_tensors(x).repeat(x),
                                        cycle_length=2, num_parallel_calls=parallel)
    assert values(ds) == [1, 2, 2, 3, 3, 3]


@pytest.mark.parametrize("parallel", [None, 2, -1])
def test_interleave_doc_order_block_length(parallel):
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
                                        cycle_length=2, block_length=4,
                                        num_parallel_calls=parallel)
    assert values(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3,
                          4, 4, 5, 5, 5, 5, 5, 5]


def test_flat_map_concatenates():
    ds = Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6]]).flat_map(Dataset.from_tensor_slices)
    assert values(ds) == [1, 2, 3, 4, 5, 6]


def test_elements_are_eager_tensors_and_tuples_unpack():
    ds = Dataset.from_tensor_slices(([1, 2], [3.0, 4.0])).map(lambda a, b: (b, a))
    first = next(iter(ds))
    assert isinstance(first[0], EagerTensor) and first[0].dtype == dtypes.float32
    assert values(ds) == [(3.0, 1), (4.0, 2)]


def test_dict_elements_and_spec():
    ds = Dataset.from_tensor_slices({"x": np.zeros((3, 2), np.float32), "y": [1, 2, 3]})
    assert ds.element_spec == {"x": TensorSpec([2], dtypes.float32),
                               "y": TensorSpec([], dtypes.int32)}
    assert [e["y"] for e in ds.as_numpy_iterator()] == [1, 2, 3]


def test_namedtuple_is_passed_whole():
    Point = collections.namedtuple("Point", "x y")
    ds = Dataset.from_tensors(Point(1, 2)).map(lambda p: p.x + p.y)
    assert values(ds) == [3]


def test_batch_and_drop_remainder_shapes():
    ds = Dataset.range(10).batch(4)
    assert values(ds) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert ds.element_spec.shape.as_list() == [None]
    dropped = Dataset.range(10).batch(4, drop_remainder=True)
    assert dropped.element_spec.shape.as_list() == [4]
    assert len(dropped) == 2


def test_batch_of_different_shapes_names_component():
    bad = Dataset.from_generator(lambda: iter([[1], [1, 2]]), output_types=dtypes.int32,
                                 output_shapes=[None]).batch(2)
    with pytest.raises(errors.InvalidArgumentError, match="different shapes in component 0"):
        list(bad)


def test_padded_batch_shapes():
    ragged = Dataset.from_generator(lambda: (np.arange(n) for n in range(1, 5)),
                                    output_signature=TensorSpec([None], dtypes.int64))
    batches = list(ragged.padded_batch(2).as_numpy_iterator())
    assert [b.shape for b in batches] == [(2, 2), (2, 4)]
    assert batches[0].tolist() == [[0, 0], [0, 1]]
    fixed = list(ragged.padded_batch(2, padded_shapes=[5], padding_values=np.int64(-1)))
    assert fixed[0].numpy().tolist() == [[0, -1, -1, -1, -1], [0, 1, -1, -1, -1]]
    assert ragged.padded_batch(2).element_spec.shape.as_list() == [None, None]
    rows = Dataset.from_generator(lambda: (np.ones((n, 3)) for n in (1, 2)),
                                  output_signature=TensorSpec([None, 3], dtypes.float64))
    assert rows.padded_batch(2).element_spec.shape.as_list() == [None, None, 3]  # known: kept
    dropped = ragged.padded_batch(2, drop_remainder=True)
    assert dropped.element_spec.shape.as_list() == [2, None]


def test_padded_batch_too_small_shape_raises():
    ragged = Dataset.from_generator(lambda: (np.arange(n) for n in (1, 3)),
                                    output_signature=TensorSpec([None], dtypes.int64))
    with pytest.raises(errors.InvalidArgumentError, match="larger than the padded shape"):
        list(ragged.padded_batch(2, padded_shapes=[2]))


def test_unbatch_inverts_batch():
    ds = Dataset.from_tensor_slices((np.arange(6), np.arange(6) * 2)).batch(4).unbatch()
    assert values(ds) == [(i, 2 * i) for i in range(6)]
    assert ds.element_spec[0].shape.as_list() == []


def test_window():
    ds = Dataset.range(7).window(3, shift=2).flat_map(lambda w: w.batch(3))
    assert values(ds) == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    strided = Dataset.range(7).window(2, shift=1, stride=2, drop_remainder=True)
    assert values(strided.flat_map(lambda w: w.batch(2))) == [[0, 2], [1, 3], [2, 4], [3, 5],
                                                              [4, 6]]


def test_repeat_take_skip_concatenate_enumerate_shard():
    assert values(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert values(Dataset.range(5).skip(2)) == [2, 3, 4]
    assert values(Dataset.range(2).concatenate(Dataset.range(5, 7))) == [0, 1, 5, 6]
    assert values(Dataset.from_tensor_slices([7, 8]).enumerate(start=1)) == [(1, 7), (2, 8)]
    assert values(Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    assert values(Dataset.range(10).filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    assert values(Dataset.range(10).take_while(lambda x: x < 3)) == [0, 1, 2]
    assert values(Dataset.range(0).repeat()) == []


def test_zip_structures():
    a, b = Dataset.range(3), Dataset.range(10, 20)
    assert values(Dataset.zip((a, b))) == [(0, 10), (1, 11), (2, 12)]
    assert [e["b"] for e in Dataset.zip({"a": a, "b": b}).as_numpy_iterator()] == [10, 11, 12]


def test_cardinality():
    assert int(Dataset.range(10).cardinality()) == 10
    assert int(Dataset.range(10).repeat().cardinality()) == INFINITE_CARDINALITY
    assert int(Dataset.range(10).filter(lambda x: True).cardinality()) == UNKNOWN_CARDINALITY
    assert int(Dataset.range(10).batch(3).cardinality()) == 4
    assert int(Dataset.range(10).repeat().take(5).cardinality()) == 5
    assert int(Dataset.range(10).shard(3, 0).cardinality()) == 4
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(1).repeat())


def test_shuffle_seeded_is_reproducible_and_reshuffles():
    ds = Dataset.range(20).shuffle(20, seed=7)
    first, second = values(ds), values(ds)
    assert sorted(first) == list(range(20)) and first != list(range(20))
    assert first != second
    again = Dataset.range(20).shuffle(20, seed=7)
    assert values(again) == first and values(again) == second
    fixed = Dataset.range(20).shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)
    unseeded = Dataset.range(20).shuffle(5, reshuffle_each_iteration=False)
    assert values(unseeded) == values(unseeded)


def test_shuffle_buffer_bounds_displacement():
    out = values(Dataset.range(100).shuffle(3, seed=1))
    assert sorted(out) == list(range(100))
    assert all(out[i] <= i + 2 for i in range(100))


def test_apply_with_options_and_errors():
    ds = Dataset.range(4).apply(lambda d: d.map(lambda x: x + 1))
    assert values(ds) == [1, 2, 3, 4]
    opts = Options()
    opts.deterministic = False
    assert ds.with_options(opts).options().deterministic is False
    with pytest.raises(TypeError, match="must return a Dataset"):
        ds.apply(lambda d: 3)
    with pytest.raises(errors.InvalidArgumentError, match="batch_size must be positive"):
        ds.batch(0)


def test_iterator_protocols():
    it = iter(Dataset.range(1))
    assert int(it.get_next()) == 0
    with pytest.raises(errors.OutOfRangeError):
        it.get_next()
    assert not iter(Dataset.range(0)).get_next_as_optional().has_value()
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10


def test_from_generator_signature_args_and_checks():
    def gen(n, scale):
        for i in range(n):
            yield {"i": i * scale, "s": "abc"[: i + 1]}
    ds = Dataset.from_generator(gen, args=(3, 2.0), output_signature={
        "i": TensorSpec([], dtypes.float32), "s": TensorSpec([], dtypes.string)})
    assert [(e["i"], e["s"]) for e in ds.as_numpy_iterator()] == [(0, b"a"), (2, b"ab"),
                                                                   (4, b"abc")]
    bad = Dataset.from_generator(lambda: iter([[1, 2]]), output_types=dtypes.int32,
                                 output_shapes=[3])
    with pytest.raises(TypeError, match="shape"):
        list(bad)
    with pytest.raises(TypeError, match="output_signature"):
        Dataset.from_generator(lambda: iter(()))


def test_from_tensor_slices_mismatch_names_shapes():
    with pytest.raises(errors.InvalidArgumentError, match="same size"):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))


def test_list_files(tmp_path):
    for name in "bca":
        (tmp_path / f"{name}.txt").write_text(name)
    ds = Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
    assert [p.decode()[-5:] for p in ds.as_numpy_iterator()] == ["a.txt", "b.txt", "c.txt"]
    with pytest.raises(errors.InvalidArgumentError, match="no files matched"):
        Dataset.list_files(str(tmp_path / "*.csv"))
