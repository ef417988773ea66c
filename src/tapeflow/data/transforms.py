"""Order and count: repeat, take, skip, take_while, concatenate, shard, options, sampling."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow.data import chunks, seeds, structure
from tapeflow.data.dataset import INFINITE, UNKNOWN, Dataset, _EpochCounter
from tapeflow.data.options import Options
from tapeflow.framework import errors


class _Unary(Dataset):
    """A transformation with one input whose element_spec it keeps."""

    def __init__(self, input_dataset: Dataset):
        self._inputs = (input_dataset,)

    def _compute_spec(self) -> Any:
        return self._inputs[0].element_spec


class RepeatDataset(_Unary):
    """Re-iterate the input `count` times (forever when -1): every epoch is a fresh iterator."""

    def __init__(self, input_dataset: Dataset, count: int):
        super().__init__(input_dataset)
        self._count = count

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        epoch = 0
        while self._count < 0 or epoch < self._count:
            source = self._inputs[0]._iterate(ctx)
            produced = False
            try:
                for element in source:
                    produced = True
                    yield element
            finally:
                source.close()
            if not produced:  # an empty input repeated forever is empty, not a hang
                return
            epoch += 1

    def _chunks(self, ctx: Any) -> Iterator[Any] | None:
        first = chunks.chunks_of(self._inputs[0], ctx) if self._count != 0 else iter(())
        return None if first is None else self._repeat_chunks(ctx, first)

    def _repeat_chunks(self, ctx: Any, source: Iterator[Any]) -> Iterator[Any]:
        epoch = 0
        while self._count < 0 or epoch < self._count:
            source = source or chunks.chunks_of(self._inputs[0], ctx)
            produced = False
            try:
                for chunk in source:
                    produced = True
                    yield chunk
            finally:
                source.close()
            if not produced:
                return
            epoch, source = epoch + 1, None

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if self._count < 0:
            return 0 if n == 0 else INFINITE
        if n < 0:
            return n
        return n * self._count


class TakeDataset(_Unary):
    def __init__(self, input_dataset: Dataset, count: int):
        super().__init__(input_dataset)
        self._count = count

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        if self._count == 0:
            return
        source = self._inputs[0]._iterate(ctx)
        try:
            for i, element in enumerate(source, 1):
                yield element
                if i == self._count:
                    return
        finally:
            source.close()

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if self._count < 0:
            return n
        if n == INFINITE:
            return self._count
        if n == UNKNOWN:
            return UNKNOWN
        return min(n, self._count)


class SkipDataset(_Unary):
    def __init__(self, input_dataset: Dataset, count: int):
        super().__init__(input_dataset)
        self._count = count

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        source = self._inputs[0]._iterate(ctx)
        try:
            for i, element in enumerate(source):
                if self._count >= 0 and i >= self._count:
                    yield element
        finally:
            source.close()

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if self._count < 0:
            return 0 if n >= 0 else n
        return max(0, n - self._count) if n >= 0 else n


class TakeWhileDataset(_Unary):
    def __init__(self, input_dataset: Dataset, predicate: Callable):
        super().__init__(input_dataset)
        self._predicate = predicate

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        source = self._inputs[0]._iterate(ctx)
        try:
            for element in source:
                if not bool(structure.to_array(
                        structure.call_with_element(self._predicate, element))):
                    return
                yield element
        finally:
            source.close()


class ConcatenateDataset(Dataset):
    def __init__(self, first: Dataset, second: Dataset):
        if not isinstance(second, Dataset):
            raise TypeError(f"concatenate(): expected a Dataset, got {type(second).__name__}\n"
                            f"{errors.user_line()}")
        self._inputs = (first, second)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        for d in self._inputs:
            source = d._iterate(ctx)
            try:
                yield from source
            finally:
                source.close()

    def _compute_spec(self) -> Any:
        a, b = (d.element_spec for d in self._inputs)
        structure.assert_same_structure(a, b, "concatenate()")
        return structure.relax_specs(a, b)

    def _cardinality(self) -> int:
        a, b = (d._cardinality() for d in self._inputs)
        if INFINITE in (a, b):
            return INFINITE
        if UNKNOWN in (a, b):
            return UNKNOWN
        return a + b


SHARD_HINT = -1   # tf.data.experimental.SHARD_HINT


class ShardDataset(_Unary):
    def __init__(self, input_dataset: Dataset, num_shards: int, index: int):
        super().__init__(input_dataset)
        self._num_shards, self._index = num_shards, index

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        num_shards, index = self._num_shards, self._index
        if num_shards == SHARD_HINT:
            hint = getattr(ctx, "shard_hint", None)
            if hint is None:
                raise errors.InvalidArgumentError(
                    "shard(SHARD_HINT, SHARD_HINT) is a placeholder: it runs only on a tf.data "
                    "service worker under ShardingPolicy.HINT, which replaces it with "
                    "shard(num_workers, worker_index)")
            num_shards, index = hint
        source = self._inputs[0]._iterate(ctx)
        try:
            for i, element in enumerate(source):
                if i % num_shards == index:
                    yield element
        finally:
            source.close()

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if n < 0 or self._num_shards == SHARD_HINT:
            return n if n < 0 else UNKNOWN
        return n // self._num_shards + (1 if self._index < n % self._num_shards else 0)


class OptionsDataset(_Unary):
    def __init__(self, input_dataset: Dataset, options: Options):
        if not isinstance(options, Options):
            raise TypeError(f"with_options(): expected tf.data.Options, got "
                            f"{type(options).__name__}\n{errors.user_line()}")
        super().__init__(input_dataset)
        self._own_options = options

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        return self._inputs[0]._iterate(ctx)

    def _chunks(self, ctx: Any) -> Iterator[Any] | None:
        return chunks.chunks_of(self._inputs[0], ctx)

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()


class SampleDataset(Dataset):
    """`sample_from_datasets`: pick the next input at random with the given weights."""

    def __init__(self, datasets: list, weights: Any, seed: int | None, stop_on_empty: bool):
        self._inputs = tuple(datasets)
        n = len(datasets)
        w = np.full(n, 1.0 / n) if weights is None else structure.to_array(weights, "float64")
        self._weights = np.asarray(w, dtype=np.float64)
        self._seed, self._stop = seeds.resolve(seed), stop_on_empty
        self._epochs = _EpochCounter()

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        rng = seeds.epoch_rng(ctx.stage_seed(self, self._seed), ctx.epoch(self))
        iterators = [d._iterate(ctx) for d in self._inputs]
        weights = self._weights.copy()
        try:
            while weights.sum() > 0:
                i = int(rng.choice(len(iterators), p=weights / weights.sum()))
                element = next(iterators[i], None)
                if element is None:
                    if self._stop:
                        return
                    weights[i] = 0.0
                    continue
                yield element
        finally:
            for it in iterators:
                it.close()

    def _compute_spec(self) -> Any:
        return self._inputs[0].element_spec


class ChooseDataset(Dataset):
    """`choose_from_datasets`: the next input is named by an int64 `choice_dataset`."""

    def __init__(self, datasets: list, choice: Dataset, stop_on_empty: bool):
        self._inputs = (choice, *datasets)
        self._stop = stop_on_empty

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        choices = self._inputs[0]._iterate(ctx)
        iterators = [d._iterate(ctx) for d in self._inputs[1:]]
        try:
            for c in choices:
                element = next(iterators[int(c)], None)
                if element is None:
                    if self._stop:
                        return
                    continue
                yield element
        finally:
            choices.close()
            for it in iterators:
                it.close()

    def _compute_spec(self) -> Any:
        return self._inputs[1].element_spec
