"""`tf.data.Dataset`: an immutable description of a pipeline; iterating it runs the pipeline.

Each transformation is a small Dataset subclass in its own module (sources, mapping, interleave,
batching, shuffle, prefetch, cache, transforms) implementing two things:
`_iterate(ctx)`, a generator of internal elements (nested NumPy arrays), and `_compute_spec()`,
the element structure as TensorSpecs. This class only holds the public, chainable API.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow.data.autotune import AUTOTUNE, AutotuneReport
from tapeflow.data.iterator import DatasetIterator, NumpyIterator
from tapeflow.data.options import Options
from tapeflow.framework import errors
from tapeflow.framework.tensor import wrap

INFINITE = -1
UNKNOWN = -2


class Dataset:
    """A sequence of elements (nested tensors) built from sources and transformations."""

    _inputs: tuple = ()
    _own_options: Options | None = None

    # ---- what subclasses implement -------------------------------------------------------
    def _iterate(self, ctx: Any) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement _iterate")

    def _compute_spec(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement _compute_spec")

    def _cardinality(self) -> int:
        return UNKNOWN

    # ---- introspection -------------------------------------------------------------------
    @property
    def element_spec(self) -> Any:
        """The TensorSpec structure of one element (dims that vary are None)."""
        spec = self.__dict__.get("_spec")
        if spec is None:
            spec = self._compute_spec()
            self.__dict__["_spec"] = spec
        return spec

    def cardinality(self) -> Any:
        """Number of elements, or INFINITE (-1) / UNKNOWN (-2), as an int64 scalar tensor."""
        return wrap(np.asarray(self._cardinality(), dtype=np.int64))

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self) -> bool:
        return True

    def options(self) -> Options:
        """The options of this pipeline: those of its inputs merged with its own."""
        merged = Options()
        for d in self._inputs:
            merged = merged.merge(d.options())
        if self._own_options is not None:
            merged = merged.merge(self._own_options)
        return merged

    def autotune_report(self) -> AutotuneReport:
        """What AUTOTUNE chose for the most recent iterator over this dataset, and why."""
        tuner = self.__dict__.get("_last_tuner")
        if tuner is None:
            raise ValueError("autotune_report(): iterate over the dataset first")
        return tuner.report()

    def __getstate__(self) -> dict:
        """Pickled (to data-service workers, by Ray) without the last iterator's tuner."""
        state = dict(self.__dict__)
        state.pop("_last_tuner", None)
        return state

    def __repr__(self) -> str:
        try:
            spec = self.element_spec
        except Exception:  # a spec that needs running user code may fail; repr must not
            spec = "?"
        return f"<{type(self).__name__} element_spec={spec}>"

    # ---- iteration -----------------------------------------------------------------------
    def __iter__(self) -> DatasetIterator:
        return DatasetIterator(self)

    def as_numpy_iterator(self) -> DatasetIterator:
        """Iterate yielding NumPy values instead of tensors."""
        return NumpyIterator(self)

    def reduce(self, initial_state: Any, reduce_func: Callable) -> Any:
        """Fold `reduce_func(state, element)` over the dataset."""
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return state

    def get_single_element(self) -> Any:
        it = iter(self)
        try:
            first = next(it)
        except StopIteration:
            raise errors.InvalidArgumentError("Dataset was empty.") from None
        try:
            next(it)
        except StopIteration:
            return first
        raise errors.InvalidArgumentError("Dataset had more than one element.")

    # ---- sources -------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> Dataset:
        """One element per slice along the first dimension of every component."""
        from tapeflow.data.sources import TensorSliceDataset
        return TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> Dataset:
        """A single element."""
        from tapeflow.data.sources import TensorDataset
        return TensorDataset(tensors)

    @staticmethod
    def range(*args: int, dtype: Any = None, name: str | None = None) -> Dataset:
        """Like Python's range, as int64 scalars."""
        from tapeflow.data.sources import RangeDataset
        return RangeDataset(*args, dtype=dtype)

    @staticmethod
    def from_generator(generator: Callable, output_types: Any = None, output_shapes: Any = None,
                       args: Any = None, output_signature: Any = None,
                       name: str | None = None) -> Dataset:
        """Elements produced by calling `generator(*args)` anew for every iteration."""
        from tapeflow.data.sources import GeneratorDataset
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def zip(*datasets: Any, name: str | None = None) -> Dataset:
        """Elements are tuples (or the given nesting) of the inputs' elements, in lockstep."""
        from tapeflow.data.sources import ZipDataset
        if len(datasets) == 1 and not isinstance(datasets[0], Dataset):
            datasets = datasets[0]
        return ZipDataset(datasets)

    @staticmethod
    def list_files(file_pattern: Any, shuffle: bool | None = None, seed: int | None = None,
                   name: str | None = None) -> Dataset:
        """File names matching a glob pattern (or list of patterns), shuffled by default."""
        from tapeflow.data.sources import list_files
        return list_files(file_pattern, shuffle, seed)

    @staticmethod
    def sample_from_datasets(datasets: list, weights: Any = None, seed: int | None = None,
                             stop_on_empty_dataset: bool = False) -> Dataset:
        from tapeflow.data.transforms import SampleDataset
        return SampleDataset(datasets, weights, seed, stop_on_empty_dataset)

    @staticmethod
    def choose_from_datasets(datasets: list, choice_dataset: Dataset,
                             stop_on_empty_dataset: bool = True) -> Dataset:
        from tapeflow.data.transforms import ChooseDataset
        return ChooseDataset(datasets, choice_dataset, stop_on_empty_dataset)

    # ---- element-wise transformations ----------------------------------------------------
    def map(self, map_func: Callable, num_parallel_calls: int | None = None,
            deterministic: bool | None = None, name: str | None = None,
            use_processes: bool | int = False) -> Dataset:
        """Apply `map_func` to every element; in parallel on worker threads if asked.

        `use_processes=True` (tapeflow's own switch) runs a pure-Python `map_func` on worker
        processes instead, which the GIL does not serialize; `map_func` must be picklable and
        `num_parallel_calls` defaults to AUTOTUNE (one process per core).
        `use_processes=tf.data.AUTOTUNE` measures threads against processes on the first
        elements and keeps the faster (see data/choose_map.py).
        """
        from tapeflow.data.mapping import MapDataset, ParallelMapDataset
        if use_processes is not True and use_processes == AUTOTUNE:
            from tapeflow.data.choose_map import ChoosingMapDataset
            calls = AUTOTUNE if num_parallel_calls is None else num_parallel_calls
            return ChoosingMapDataset(self, map_func,
                                      positive_or_autotune(calls, "num_parallel_calls"),
                                      deterministic)
        if use_processes:
            from tapeflow.data.process_map import ProcessMapDataset
            calls = AUTOTUNE if num_parallel_calls is None else num_parallel_calls
            return ProcessMapDataset(self, map_func,
                                     positive_or_autotune(calls, "num_parallel_calls"),
                                     deterministic)
        if num_parallel_calls is None:
            return MapDataset(self, map_func)
        return ParallelMapDataset(self, map_func,
                                  positive_or_autotune(num_parallel_calls, "num_parallel_calls"),
                                  deterministic)

    def filter(self, predicate: Callable, name: str | None = None) -> Dataset:
        """Keep the elements for which `predicate` returns True."""
        from tapeflow.data.mapping import FilterDataset
        return FilterDataset(self, predicate)

    def flat_map(self, map_func: Callable, name: str | None = None) -> Dataset:
        """Map each element to a dataset and concatenate those datasets."""
        from tapeflow.data.interleave import InterleaveDataset
        return InterleaveDataset(self, map_func, 1, 1)

    def interleave(self, map_func: Callable, cycle_length: int | None = None,
                   block_length: int | None = None, num_parallel_calls: int | None = None,
                   deterministic: bool | None = None, name: str | None = None) -> Dataset:
        """Map each element to a dataset and interleave `cycle_length` of them, TF's order."""
        from tapeflow.data.interleave import InterleaveDataset, ParallelInterleaveDataset
        cycle = (AUTOTUNE if cycle_length is None
                 else positive_or_autotune(cycle_length, "cycle_length"))
        block = 1 if block_length is None else positive(block_length, "block_length")
        if num_parallel_calls is None:
            return InterleaveDataset(self, map_func, cycle, block)
        return ParallelInterleaveDataset(
            self, map_func, cycle, block,
            positive_or_autotune(num_parallel_calls, "num_parallel_calls"), deterministic)

    def enumerate(self, start: int = 0, name: str | None = None) -> Dataset:
        """Pair each element with its index: `(i, element)`."""
        from tapeflow.data.sources import RangeDataset, ZipDataset
        return ZipDataset((RangeDataset(int(start), np.iinfo(np.int64).max), self))

    # ---- batching ------------------------------------------------------------------------
    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_calls: int | None = None, deterministic: bool | None = None,
              name: str | None = None) -> Dataset:
        """Stack consecutive elements into batches."""
        from tapeflow.data.batching import BatchDataset
        return BatchDataset(self, positive(batch_size, "batch_size"), bool(drop_remainder))

    def padded_batch(self, batch_size: int, padded_shapes: Any = None,
                     padding_values: Any = None, drop_remainder: bool = False,
                     name: str | None = None) -> Dataset:
        """Batch elements of different shapes, padding each component to a common shape."""
        from tapeflow.data.batching import PaddedBatchDataset
        return PaddedBatchDataset(self, positive(batch_size, "batch_size"), padded_shapes,
                                  padding_values, bool(drop_remainder))

    def bucket_by_sequence_length(self, element_length_func: Callable, bucket_boundaries: Any,
                                  bucket_batch_sizes: Any, padded_shapes: Any = None,
                                  padding_values: Any = None,
                                  pad_to_bucket_boundary: bool = False, no_padding: bool = False,
                                  drop_remainder: bool = False,
                                  name: str | None = None) -> Dataset:
        """Padded batches of elements whose lengths fall in the same bucket."""
        from tapeflow.data.bucketing import BucketBySequenceLengthDataset
        return BucketBySequenceLengthDataset(self, element_length_func, list(bucket_boundaries),
                                             list(bucket_batch_sizes), padded_shapes,
                                             padding_values, pad_to_bucket_boundary, no_padding,
                                             drop_remainder)

    def ragged_batch(self, batch_size: int, drop_remainder: bool = False,
                     row_splits_dtype: Any = None, name: str | None = None) -> Dataset:
        """Batch elements of different lengths into RaggedTensors (ragged first dim)."""
        from tapeflow.data.composite import RaggedBatchDataset
        return RaggedBatchDataset(self, positive(batch_size, "batch_size"), bool(drop_remainder),
                                  row_splits_dtype or "int64")

    def unbatch(self, name: str | None = None) -> Dataset:
        """Split each element along its first dimension (inverse of batch)."""
        from tapeflow.data.batching import UnbatchDataset
        return UnbatchDataset(self)

    def window(self, size: int, shift: int | None = None, stride: int = 1,
               drop_remainder: bool = False, name: str | None = None) -> Dataset:
        """Elements become datasets of `size` consecutive elements, `shift` apart."""
        from tapeflow.data.batching import WindowDataset
        size = positive(size, "size")
        return WindowDataset(self, size, size if shift is None else positive(shift, "shift"),
                             positive(stride, "stride"), bool(drop_remainder))

    # ---- order and count -----------------------------------------------------------------
    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool | None = None, name: str | None = None) -> Dataset:
        """Sample uniformly from a buffer of `buffer_size` elements."""
        from tapeflow.data.shuffle import ShuffleDataset
        return ShuffleDataset(self, positive(buffer_size, "buffer_size"), seed,
                              True if reshuffle_each_iteration is None
                              else bool(reshuffle_each_iteration))

    def repeat(self, count: int | None = None, name: str | None = None) -> Dataset:
        """Repeat `count` times (forever when None or -1)."""
        from tapeflow.data.transforms import RepeatDataset
        return RepeatDataset(self, -1 if count is None else int(count))

    def take(self, count: int, name: str | None = None) -> Dataset:
        """The first `count` elements (all when -1)."""
        from tapeflow.data.transforms import TakeDataset
        return TakeDataset(self, int(count))

    def skip(self, count: int, name: str | None = None) -> Dataset:
        """All but the first `count` elements (none when -1)."""
        from tapeflow.data.transforms import SkipDataset
        return SkipDataset(self, int(count))

    def take_while(self, predicate: Callable, name: str | None = None) -> Dataset:
        from tapeflow.data.transforms import TakeWhileDataset
        return TakeWhileDataset(self, predicate)

    def concatenate(self, dataset: Dataset, name: str | None = None) -> Dataset:
        """This dataset's elements followed by `dataset`'s."""
        from tapeflow.data.transforms import ConcatenateDataset
        return ConcatenateDataset(self, dataset)

    def shard(self, num_shards: int, index: int, name: str | None = None) -> Dataset:
        """Every `num_shards`-th element starting at `index`. `shard(SHARD_HINT, SHARD_HINT)`
        is a placeholder the tf.data service fills in under `ShardingPolicy.HINT`."""
        from tapeflow.data.transforms import SHARD_HINT, ShardDataset
        if int(num_shards) == SHARD_HINT and int(index) == SHARD_HINT:
            return ShardDataset(self, SHARD_HINT, SHARD_HINT)
        num_shards = positive(num_shards, "num_shards")
        index = int(index)
        if not 0 <= index < num_shards:
            raise errors.InvalidArgumentError(
                f"shard(): index must be in [0, num_shards={num_shards}), got {index}\n"
                f"{errors.user_line()}")
        return ShardDataset(self, num_shards, index)

    # ---- performance ---------------------------------------------------------------------
    def prefetch(self, buffer_size: int, name: str | None = None) -> Dataset:
        """Produce elements ahead of the consumer on a background thread."""
        from tapeflow.data.prefetch import PrefetchDataset
        return PrefetchDataset(self, positive_or_autotune(buffer_size, "buffer_size"))

    def cache(self, filename: str = "", name: str | None = None) -> Dataset:
        """Keep elements after the first full pass, in memory or in `filename`."""
        from tapeflow.data.cache import FileCacheDataset, MemoryCacheDataset
        filename = filename.numpy().decode() if hasattr(filename, "numpy") else str(filename)
        return FileCacheDataset(self, filename) if filename else MemoryCacheDataset(self)

    # ---- on disk -------------------------------------------------------------------------
    def save(self, path: str, compression: str | None = None, shard_func: Callable | None = None,
             checkpoint_args: Any = None) -> None:
        """Write the elements under directory `path` (atomically; see data/save_load.py)."""
        from tapeflow.data import save_load
        save_load.write(self, path, compression, shard_func)

    @staticmethod
    def load(path: str, element_spec: Any = None, compression: str | None = None,
             reader_func: Callable | None = None) -> Dataset:
        """The elements a `save` wrote under `path`, CRC-checked."""
        from tapeflow.data import save_load
        return save_load.load(path, element_spec, compression, reader_func)

    # ---- composition ---------------------------------------------------------------------
    def apply(self, transformation_func: Callable[[Dataset], Dataset]) -> Dataset:
        """`transformation_func(self)`, for chaining custom transformations."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"apply(): transformation_func must return a Dataset, got "
                            f"{type(result).__name__}\n{errors.user_line()}")
        return result

    def with_options(self, options: Options, name: str | None = None) -> Dataset:
        """The same elements, with `options` applied to the whole pipeline."""
        from tapeflow.data.transforms import OptionsDataset
        return OptionsDataset(self, options)


class _EpochCounter:
    """Counts iterators created from one dataset (seeds differ per epoch), thread-safely."""

    def __init__(self):
        self._n = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:   # a pipeline travels to data-service workers pickled
        return {"n": self._n}

    def __setstate__(self, state: dict) -> None:
        self._n = state["n"]
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            n = self._n
            self._n += 1
            return n

    def at_least(self, n: int) -> None:
        """Count on from `n` at least (after a restored iterator replayed epochs up to it)."""
        with self._lock:
            self._n = max(self._n, n)


def positive(value: Any, arg: str) -> int:
    """An int argument that must be >= 1, with an error naming it and the user's line."""
    n = int(value)
    if n < 1:
        raise errors.InvalidArgumentError(f"{arg} must be positive, got {n}\n{errors.user_line()}")
    return n


def positive_or_autotune(value: Any, arg: str) -> int:
    n = int(value)
    if n != AUTOTUNE and n < 1:
        raise errors.InvalidArgumentError(
            f"{arg} must be positive or tf.data.AUTOTUNE (-1), got {n}\n{errors.user_line()}")
    return n
