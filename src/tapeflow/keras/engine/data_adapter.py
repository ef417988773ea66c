"""Turn what ``fit``/``evaluate``/``predict`` receive into batches of (x, y, sample_weight).

NumPy arrays (or nested lists/dicts of them) are sliced into batches, reshuffled every epoch
when asked; a ``tapeflow.data.Dataset``, a Python generator or a ``keras.utils.Sequence`` is
iterated as it is (its elements are ``x``, ``(x, y)`` or ``(x, y, sample_weight)``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.framework import errors, nest
from tapeflow.framework.composite import CompositeTensor
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import EagerTensor
from tapeflow.keras.engine import structures
from tapeflow.keras.engine.sequence import ordered_batches
from tapeflow.ops import random_ops


def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """(x, y, sample_weight) from a batch given as x, (x,), (x, y) or (x, y, sw); a list is
    read as a tuple, as Keras does (so a two-input model's x must come wrapped: ``(x,)``)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     f"`(x, y, sample_weight)`, found a tuple of {len(data)} elements.")


def _is_dataset(x: Any) -> bool:
    from tapeflow.data import Dataset

    return isinstance(x, Dataset)


def _to_array(x: Any) -> Any:
    if x is None or isinstance(x, CompositeTensor):  # a RaggedTensor is batched as it is
        return x
    if isinstance(x, EagerTensor):
        return x._value
    if hasattr(x, "_value") and isinstance(x._value, np.ndarray):
        return x._value
    return np.asarray(x)


_SCALARS = (int, float, bool, np.generic)


def _to_arrays(structure: Any) -> Any:
    """Every array of a structure as NumPy; a list of plain numbers (``y=[0, 1, 1]``) is one
    array, not a structure of scalars."""
    if isinstance(structure, (list, tuple)) and structure and all(
            isinstance(v, _SCALARS) for v in nest.flatten(structure)):
        return np.asarray(structure)
    if isinstance(structure, dict):
        return {k: _to_arrays(v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)) and not hasattr(type(structure), "_fields"):
        return type(structure)(_to_arrays(v) for v in structure)
    return _to_array(structure)


def _num_samples(structure: Any) -> int:
    """The common sample count of (x, y, sample_weight); a clear error naming them otherwise."""
    parts = structure if isinstance(structure, tuple) and len(structure) == 3 else (structure,)
    counts = [[_length(a) for a in nest.flatten(p) if a is not None] for p in parts]
    sizes = {n for c in counts for n in c}
    if len(sizes) != 1:
        named = ", ".join(f"{name} sizes: {c if len(c) > 1 else c[0]}"
                          for name, c in zip(("x", "y", "sample_weight"), counts) if c)
        raise ValueError(f"Data cardinality is ambiguous: {named}. Make sure all arrays "
                         f"contain the same number of samples.\n{errors.user_line()}")
    return sizes.pop()


def _sparse_rows(st: Any, rows: np.ndarray) -> Any:
    """The rows `rows` of an eager SparseTensor, in that order, as a new SparseTensor."""
    from tapeflow.sparse.tensor import SparseTensor

    index, values = st.indices.numpy(), st.values.numpy()
    position = np.full(int(st.shape[0]), -1, np.int64)
    position[rows] = np.arange(len(rows))
    new_row = position[index[:, 0]]
    keep = np.flatnonzero(new_row >= 0)
    keep = keep[np.lexsort((keep, new_row[keep]))]  # by new row, entries in their order
    new_index = index[keep].copy()
    new_index[:, 0] = new_row[keep]
    shape = np.asarray([len(rows)] + st.shape.as_list()[1:], np.int64)
    return SparseTensor(convert_to_tensor(new_index), convert_to_tensor(values[keep]),
                        convert_to_tensor(shape))


def _length(a: Any) -> int:
    """The number of samples of an array, a RaggedTensor or a SparseTensor."""
    shape = getattr(a, "shape", None)
    if isinstance(a, CompositeTensor) and shape is not None and shape[0] is not None:
        return int(shape[0])
    return len(a)


def _tensor(a: Any) -> Any:
    return a if isinstance(a, CompositeTensor) else convert_to_tensor(a)


def _rows(a: Any, index: Any) -> Any:
    """Samples `index` (a slice or an index array) of an array, a RaggedTensor or a
    SparseTensor."""
    from tapeflow.sparse.tensor import SparseTensor

    if isinstance(a, SparseTensor):
        return _sparse_rows(a, np.arange(a.shape[0])[index])
    if isinstance(a, CompositeTensor) and not isinstance(index, slice):
        import tapeflow  # the public gather: its composite dispatch

        return tapeflow.gather(a, convert_to_tensor(np.asarray(index, np.int64)))
    return a[index]


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """What a step receives: ``x`` (``(x,)`` when x is itself a tuple), ``(x, y)`` or
    ``(x, y, sample_weight)``, as Keras packs it, so ``x, y = data`` works in a custom
    ``train_step`` when there are no sample weights."""
    if isinstance(x, list):
        x = tuple(x)  # Keras turns lists into tuples (tf.data would stack a list)
    if y is None:
        return (x,) if isinstance(x, tuple) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def is_batch_source(x: Any) -> bool:
    """Whether `x` yields whole batches (a Dataset, a generator, a Sequence)."""
    return _is_dataset(x) or _is_sequence(x) or _is_generator(x)


def _is_sequence(x: Any) -> bool:
    from tapeflow.keras.engine.sequence import Sequence

    return isinstance(x, Sequence)


def _is_generator(x: Any) -> bool:
    return hasattr(x, "__next__") and hasattr(x, "__iter__")


def _shuffle_generator() -> np.random.Generator | None:
    """Where fit's shuffle order comes from: the ``tf.random`` seed stream once a global seed
    is set (so ``tf.random.set_seed``/``keras.utils.set_random_seed`` make fit repeat), else
    NumPy's global generator (None here), which multi-worker training seeds on every worker."""
    return random_ops.make_generator() if random_ops.get_global_seed() is not None else None


def _as_tensors(element: Any) -> Any:
    """A batch from a generator or a Sequence (NumPy arrays, lists of numbers) as tensors."""
    return nest.map_structure(lambda a: None if a is None else _tensor(a), _to_arrays(element))


class DataHandler:
    """Yields each epoch's batches and knows how many steps an epoch has (None: unknown).

    Arrays (NumPy, tensors, nested dicts/lists of them) are sliced into batches; a
    ``tf.data.Dataset``, a Python generator and a ``keras.utils.Sequence`` give whole batches
    (``x``, ``(x, y)`` or ``(x, y, sample_weight)``). A Sequence's batches are loaded by `workers`
    threads (forked processes with `use_multiprocessing`), up to `max_queue_size` ahead, and
    ``on_epoch_end`` runs after each epoch.
    """

    def __init__(self, x: Any, y: Any = None, sample_weight: Any = None,
                 batch_size: int | None = None, steps_per_epoch: int | None = None,
                 shuffle: bool = False, class_weight: dict | None = None, model: Any = None,
                 workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10):
        self._model = model
        self._class_weight = class_weight
        self._source = None
        self._kind = "dataset" if _is_dataset(x) else "Sequence" if _is_sequence(x) else \
            "generator" if _is_generator(x) else None
        if self._kind is not None:
            for name, value in (("y", y), ("sample_weight", sample_weight)):
                if value is not None:
                    raise ValueError(f"`{name}` argument is not supported when using a "
                                     f"{self._kind} as input: it must yield (x, y) or "
                                     "(x, y, sample_weight) batches.")
            self._source = x
            self._iterator: Iterator | None = None
            if hasattr(x, "use_multiprocessing") and hasattr(x, "max_queue_size"):  # PyDataset
                workers, use_multiprocessing = getattr(x, "workers", 1), x.use_multiprocessing
                max_queue_size = x.max_queue_size
            self._workers, self._max_queue = max(int(workers), 1), max(int(max_queue_size), 1)
            self._multiprocessing = bool(use_multiprocessing)
            self._shuffle = shuffle and self._kind == "Sequence"
            self._rng = _shuffle_generator() if self._shuffle else None
            size = _cardinality(x) if self._kind == "dataset" else \
                len(x) if self._kind == "Sequence" else None
            self.steps = steps_per_epoch if steps_per_epoch is not None else size
            return
        self._x = _to_arrays(x)
        self._y = _to_arrays(y) if y is not None else None
        self._sw = _to_arrays(sample_weight)
        if model is not None:
            structures.check_data(model, self._x, self._y, self._sw)
        self._n = _num_samples((self._x, self._y, self._sw))
        self._batch_size = batch_size or 32
        self._shuffle = shuffle
        self._rng = _shuffle_generator() if shuffle else None
        full = math.ceil(self._n / self._batch_size)
        self.steps = steps_per_epoch if steps_per_epoch is not None else full

    @property
    def is_dataset(self) -> bool:
        return self._kind == "dataset"

    @property
    def _dataset(self) -> Any:
        """The ``tf.data.Dataset`` given as x (None for other inputs)."""
        return self._source if self._kind == "dataset" else None

    def _permutation(self, n: int) -> np.ndarray:
        return self._rng.permutation(n) if self._rng is not None else np.random.permutation(n)

    @property
    def is_stream(self) -> bool:
        """A source that can run dry for good (a generator): an empty epoch ends training."""
        return self._kind == "generator"

    def epoch(self) -> Iterator[Any]:
        """The batches of one epoch, packed as a step receives them (``pack_x_y_sample_weight``)."""
        if self._kind == "Sequence":
            yield from self._sequence_epoch()
            return
        if self._source is not None:
            yield from self._stream_epoch()
            return
        order = self._permutation(self._n) if self._shuffle else None
        full = math.ceil(self._n / self._batch_size)
        for step in range(self.steps):
            start = (step % full) * self._batch_size
            index: Any = slice(start, min(start + self._batch_size, self._n))
            if order is not None:
                index = order[index]

            def take(a: Any, index: Any = index) -> Any:
                return None if a is None else _tensor(_rows(a, index))

            x = nest.map_structure(take, self._x)
            y = nest.map_structure(take, self._y) if self._y is not None else None
            sw = nest.map_structure(take, self._sw)
            yield pack_x_y_sample_weight(x, y, self._weights(y, sw))

    def _element(self, element: Any) -> Any:
        if self._kind != "dataset":
            element = _as_tensors(element)
        x, y, sw = unpack_x_y_sample_weight(element)
        return pack_x_y_sample_weight(x, y, self._weights(y, sw))

    def _stream_epoch(self) -> Iterator[Any]:
        if self._iterator is None or (self.steps is None and self._kind == "dataset"):
            self._iterator = iter(self._source)
        produced = 0
        while self.steps is None or produced < self.steps:
            try:
                element = next(self._iterator)
            except StopIteration:
                if self._kind == "dataset":
                    self._iterator = None
                if self.steps is not None and produced == 0 and self._kind == "dataset":
                    raise
                return
            produced += 1
            yield self._element(element)
        if self._kind == "dataset" and self.steps is not None and \
                _cardinality(self._source) == self.steps:
            self._iterator = None

    def _sequence_epoch(self) -> Iterator[Any]:
        seq = self._source
        count = len(seq) if self.steps is None else min(self.steps, len(seq))
        order = self._permutation(len(seq))[:count].tolist() if self._shuffle \
            else list(range(count))
        for batch in ordered_batches(seq, order, self._workers, self._max_queue,
                                     self._multiprocessing):
            yield self._element(batch)
        seq.on_epoch_end()

    def _weights(self, y: Any, sw: Any) -> Any:
        """Sample weights with ``class_weight`` folded in (multiplied, as in Keras), one entry
        per output when the model has several."""
        if self._class_weight is None or y is None:
            return sw
        names = structures.model_output_names(self._model) or \
            structures.output_names_for(y, None)
        class_weights = structures.class_weights_per_output(self._class_weight, names)
        if len(names) == 1:
            return _class_weighted(class_weights[0], y, sw)
        ys = structures.per_output(y, names, "y")
        sws = structures.per_output(sw, names, "sample_weight")
        return [_class_weighted(cw, yt, s) for cw, yt, s in zip(class_weights, ys, sws)]


def _class_weighted(class_weight: dict | None, y: Any, sw: Any) -> Any:
    """Keras's class weighting of one output: the class of a label is its argmax when the last
    axis holds several classes, otherwise the rounded label."""
    if class_weight is None or y is None:
        return sw
    ids = sorted(class_weight)
    if ids != list(range(len(ids))):
        raise ValueError("Expected `class_weight` to be a dict with keys from 0 to one less "
                         f"than the number of classes, found {class_weight}")
    table = np.array([class_weight[i] for i in ids], np.float32)
    labels = _to_array(y)
    if labels.ndim >= 2:
        labels = labels.argmax(-1) if labels.shape[-1] > 1 else labels[..., 0]
    classes = np.round(labels).astype(np.int64)
    if classes.size and (classes.min() < 0 or classes.max() >= len(table)):
        raise ValueError(f"`class_weight` has weights for classes 0..{len(table) - 1}, but the "
                         f"labels contain class {int(classes.max())}.")
    weights = table[classes]
    if sw is not None:
        sw = _to_array(sw).astype(np.float32)
        weights = weights * sw.reshape(sw.shape + (1,) * (weights.ndim - sw.ndim))
    return _tensor(weights)


def _cardinality(dataset: Any) -> int | None:
    size = int(dataset.cardinality())
    return size if size >= 0 else None


def train_validation_split(arrays: tuple, validation_split: float) -> tuple[tuple, tuple]:
    """Keras's split: the last `validation_split` fraction of samples, before shuffling."""
    if not 0.0 < validation_split < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
    flat = [a for a in nest.flatten(arrays) if a is not None]
    if any(_is_dataset(a) for a in flat):
        raise ValueError("`validation_split` is only supported for NumPy arrays and tensors, "
                         "not for a tf.data.Dataset: pass `validation_data` instead.")
    arrays = nest.map_structure(lambda a: None if a is None else _to_array(a), arrays)
    n = _num_samples(arrays)
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to split "
                         f"it into a validation and training set as specified by "
                         f"`validation_split={validation_split}`.")
    train = nest.map_structure(lambda a: None if a is None else a[:split_at], arrays)
    val = nest.map_structure(lambda a: None if a is None else a[split_at:], arrays)
    return train, val
