"""Numeric preprocessing layers: Normalization and Discretization (with ``adapt``),
CategoryEncoding and Hashing, with Keras 2's names, defaults, configs and dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error

EPSILON = 1e-7   # keras.backend.epsilon(): the smallest standard deviation divided by


class PreprocessingLayer(Layer):
    """``tf.keras.layers.experimental.preprocessing.PreprocessingLayer``: the base of layers
    with state computed from data before training (``adapt``).

    A subclass implements ``update_state(batch)`` (and ``reset_state()``, and optionally
    ``finalize_state()``); ``adapt(data, batch_size, steps)`` then resets the state, builds
    the layer on the first batch, feeds every batch (a ``Dataset``'s, or slices of
    `batch_size` rows, 32 by default, of an array), finalizes and marks the layer adapted, as
    tf-keras does. The built-in layers override ``adapt`` with one pass over all the data;
    ``is_adapted`` is true after any ``adapt``. Plain Python lists (of strings, numbers) are
    one tensor: ``StringLookup()(["a", "b"])`` is one input, not two.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "adapt" in vars(cls):  # a layer's own adapt marks it adapted too
            own = cls.adapt

            def adapt(self: Any, *args: Any, **kw: Any) -> None:
                own(self, *args, **kw)
                self._is_adapted = True

            adapt.__doc__, adapt.__name__ = own.__doc__, "adapt"
            cls.adapt = adapt

    @property
    def is_adapted(self) -> bool:
        """Whether ``adapt`` has run on this layer."""
        return getattr(self, "_is_adapted", False)

    def update_state(self, data: Any) -> None:
        """Fold one batch of data into the layer's state (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement update_state")

    def reset_state(self) -> None:
        """Forget the state ``adapt`` computed (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement reset_state")

    def finalize_state(self) -> None:
        """Turn the accumulated state into what ``call`` uses (after the last batch)."""

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Compute the layer's state from `data`: reset, then `update_state` per batch, then
        `finalize_state`."""
        if self.built:
            self.reset_state()
        for batch in _adapt_batches(data, batch_size, steps):
            if not self.built:
                self._maybe_build(batch)
            self.update_state(batch)
        self.finalize_state()
        self._is_adapted = True

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inputs, (list, tuple)) and not any(
                isinstance(v, tf.Tensor) or hasattr(v, "_keras_history")
                for v in tf.nest.flatten(inputs)):
            inputs = tf.constant(inputs)
        return super().__call__(inputs, *args, **kwargs)


def _adapt_batches(data: Any, batch_size: int | None, steps: int | None) -> Any:
    """The batches `adapt` feeds: a Dataset's own, else `batch_size` (32) rows at a time."""
    if isinstance(data, tf.data.Dataset):
        batches = iter(data)
    else:
        values = tf.convert_to_tensor(data)
        size = batch_size or 32
        total = int(values.shape[0]) if values.shape.rank else 1
        batches = (values[i:i + size] for i in range(0, total, size)) if values.shape.rank \
            else iter([values])
    for i, batch in enumerate(batches):
        if steps is not None and i >= steps:
            break
        yield batch


def adapt_array(data: Any, batch_size: int | None = None, steps: int | None = None) -> np.ndarray:
    """The values `adapt` sees: an array, a tensor, or the concatenated batches of a Dataset."""
    if isinstance(data, tf.data.Dataset):
        batches = []
        for i, batch in enumerate(data):
            if steps is not None and i >= steps:
                break
            batches.append(np.asarray(batch.numpy() if hasattr(batch, "numpy") else batch))
        if not batches:
            raise ValueError("adapt: the dataset is empty")
        return np.concatenate([b.reshape((-1,) + b.shape[1:]) if b.ndim else b[None]
                               for b in batches])
    return np.asarray(data.numpy() if hasattr(data, "numpy") else data)


class Normalization(PreprocessingLayer):
    """(x - mean) / max(sqrt(variance), 1e-7) per feature along `axis` (``invert``: undo it).

    ``adapt(data)`` sets mean and variance from data; or pass them as ``mean=``/``variance=``.
    """

    def __init__(self, axis: Any = -1, mean: Any = None, variance: Any = None,
                 invert: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        self.axis = (axis,) if isinstance(axis, int) else tuple(axis)
        if (mean is None) != (variance is None):
            raise layer_error(f"Normalization: when setting values directly, both `mean` and "
                              f"`variance` must be set. Got mean: {mean} and variance: "
                              f"{variance}")
        self.input_mean, self.input_variance, self.invert = mean, variance, invert
        self._mean = self._variance = None

    def _kept(self, rank: int) -> tuple[int, ...]:
        return tuple(sorted(a % rank for a in self.axis))

    def _broadcast_shape(self, shape: list) -> list:
        kept = self._kept(len(shape))
        return [shape[i] if i in kept else 1 for i in range(len(shape))]

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape).as_list()
        self._shape = self._broadcast_shape(shape)
        if self.input_mean is not None:
            self._set(np.asarray(self.input_mean, np.float64), np.asarray(self.input_variance,
                                                                          np.float64))
        else:  # Keras's adaptable state: weights (mean 0, variance 1 until adapted), saved
            kept = self._kept(len(shape))  # and loaded with the model (EfficientNet's files)
            state = tuple(shape[i] for i in kept)
            if None in state:
                raise layer_error(f"Normalization {self.name!r}: all `axis` values to be kept "
                                  f"must have known shape. Got axis: {self.axis}, input shape: "
                                  f"{shape}")
            self.adapt_mean = self.add_weight("mean", shape=state, initializer="zeros",
                                              trainable=False)
            self.adapt_variance = self.add_weight("variance", shape=state, initializer="ones",
                                                  trainable=False)
            self.count = self.add_weight("count", shape=(), dtype="int64", initializer="zeros",
                                         trainable=False)
        self.built = True

    def _set(self, mean: np.ndarray, variance: np.ndarray, count: int = 0) -> None:
        target = [1 if d is None else d for d in self._shape]
        dtype = self.compute_dtype
        if hasattr(self, "adapt_mean"):
            state = self.adapt_mean.shape.as_list()
            self.adapt_mean.assign(np.reshape(mean, state).astype(dtype))
            self.adapt_variance.assign(np.reshape(variance, state).astype(dtype))
            self.count.assign(np.int64(count))
            return
        self._mean = tf.constant(np.broadcast_to(mean, target).astype(dtype))
        self._variance = tf.constant(np.broadcast_to(variance, target).astype(dtype))

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Set mean and (population) variance from `data` over all but the kept axes."""
        values = adapt_array(data, batch_size, steps).astype(np.float64)
        if values.ndim == 1 and self.axis == (-1,):
            values = values[:, None]
        if not self.built:
            self.build([None] + list(values.shape[1:]))
        kept = self._kept(values.ndim)
        reduce = tuple(i for i in range(values.ndim) if i not in kept)
        self._set(values.mean(axis=reduce, keepdims=True), values.var(axis=reduce,
                                                                      keepdims=True),
                  int(np.prod([values.shape[i] for i in reduce])))

    def _state(self) -> tuple[Any, Any]:
        if self._mean is not None or not hasattr(self, "adapt_mean"):
            return self._mean, self._variance
        target = [1 if d is None else d for d in self._shape]
        return (tf.reshape(self.adapt_mean, target), tf.reshape(self.adapt_variance, target))

    @property
    def mean(self) -> Any:
        return self._state()[0]

    @property
    def variance(self) -> Any:
        return self._state()[1]

    def call(self, inputs: Any) -> Any:
        mean, variance = self._state()
        x = tf.cast(tf.convert_to_tensor(inputs), self.compute_dtype)
        scale = tf.maximum(tf.sqrt(variance), EPSILON)
        return mean + x * scale if self.invert else (x - mean) / scale

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        listed = lambda v: None if v is None else np.asarray(v).tolist()  # noqa: E731
        return {**super().get_config(), "axis": list(self.axis), "invert": self.invert,
                "mean": listed(self.input_mean), "variance": listed(self.input_variance)}


class Discretization(PreprocessingLayer):
    """Bucket index of each value: the number of `bin_boundaries` at or below it (int64).

    ``adapt`` with ``num_bins`` places the boundaries at the data's quantiles (exact ones,
    where Keras uses an approximate summary with tolerance ``epsilon``).
    """

    def __init__(self, bin_boundaries: Any = None, num_bins: int | None = None,
                 epsilon: float = 0.01, output_mode: str = "int", sparse: bool = False,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if bin_boundaries is not None and num_bins is not None:
            raise layer_error("Discretization: both `num_bins` and `bin_boundaries` should not "
                              "be set.")
        if output_mode not in ("int", "one_hot", "multi_hot", "count"):
            raise layer_error(f"Discretization: unknown output_mode {output_mode!r}")
        self.bin_boundaries = None if bin_boundaries is None else [float(b) for b in
                                                                   bin_boundaries]
        self.num_bins, self.epsilon, self.output_mode = num_bins, epsilon, output_mode
        self.sparse = sparse

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        if self.num_bins is None:
            raise layer_error("Discretization: adapt needs `num_bins`")
        values = adapt_array(data, batch_size, steps).astype(np.float64).reshape(-1)
        quantiles = np.quantile(values, np.linspace(0, 1, self.num_bins + 1)[1:-1])
        self.bin_boundaries = [float(q) for q in quantiles]

    def call(self, inputs: Any) -> Any:
        if self.bin_boundaries is None:
            raise layer_error(f"Discretization {self.name!r}: set bin_boundaries or call adapt()")
        x = tf.convert_to_tensor(inputs)
        boundaries = np.asarray(self.bin_boundaries, x.dtype.as_numpy_dtype
                                if x.dtype.is_floating else np.float64)
        index = tf.searchsorted(tf.constant(boundaries), tf.reshape(
            tf.cast(x, boundaries.dtype), [-1]), side="right")
        index = tf.reshape(tf.cast(index, tf.int64), tf.shape(x))
        if self.output_mode == "int":
            return index
        return CategoryEncoding(len(self.bin_boundaries) + 1, self.output_mode)(index)

    def get_config(self) -> dict:
        return {**super().get_config(), "bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse}


class CategoryEncoding(PreprocessingLayer):
    """Integer ids in [0, num_tokens) to one_hot, multi_hot or count vectors (float32)."""

    def __init__(self, num_tokens: int | None = None, output_mode: str = "multi_hot",
                 sparse: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if output_mode not in ("one_hot", "multi_hot", "count"):
            raise layer_error(f"CategoryEncoding: unknown output_mode {output_mode!r}; expected "
                              f"one of ('count', 'multi_hot', 'one_hot')")
        if num_tokens is None or int(num_tokens) < 1:
            raise layer_error(f"CategoryEncoding: `num_tokens` must be >= 1, got {num_tokens}")
        self.num_tokens, self.output_mode, self.sparse = int(num_tokens), output_mode, sparse

    def call(self, inputs: Any, count_weights: Any = None) -> Any:
        if isinstance(inputs, tf.RaggedTensor) and self.output_mode != "one_hot":
            return self._encode_rows(inputs, count_weights)
        ids = tf.cast(tf.convert_to_tensor(inputs), tf.int64)
        if tf.executing_eagerly():
            values = ids.numpy()
            if values.size and (values.min() < 0 or values.max() >= self.num_tokens):
                raise layer_error(f"CategoryEncoding {self.name!r}: input values must be in the "
                                  f"range 0 <= values < num_tokens with num_tokens="
                                  f"{self.num_tokens}, got values in [{values.min()}, "
                                  f"{values.max()}]")
        rank = ids.shape.rank
        if self.output_mode == "one_hot":
            if rank is not None and rank > 1 and ids.shape.as_list()[-1] == 1:
                ids = tf.squeeze(ids, [-1])
            return tf.one_hot(ids, self.num_tokens, dtype=self.compute_dtype)
        if rank == 1:
            ids = tf.expand_dims(ids, -1)
            if count_weights is not None:
                count_weights = tf.expand_dims(count_weights, -1)
        values = tf.one_hot(ids, self.num_tokens, dtype=self.compute_dtype)   # [b, n, tokens]
        if count_weights is not None:
            values = values * tf.cast(tf.expand_dims(count_weights, -1), self.compute_dtype)
        counts = tf.reduce_sum(values, axis=-2)
        return counts if self.output_mode == "count" else tf.minimum(counts, 1.0)

    def _encode_rows(self, inputs: Any, count_weights: Any) -> Any:
        """One multi_hot/count vector per ragged row: [rows, num_tokens]."""
        values = tf.one_hot(tf.cast(inputs.flat_values, tf.int64), self.num_tokens,
                            dtype=self.compute_dtype)
        if count_weights is not None:
            weights = count_weights.flat_values if isinstance(
                count_weights, tf.RaggedTensor) else count_weights
            values = values * tf.cast(tf.expand_dims(weights, -1), self.compute_dtype)
        counts = tf.math.unsorted_segment_sum(values, inputs.value_rowids(), inputs.nrows())
        return counts if self.output_mode == "count" else tf.minimum(counts, 1.0)

    def build(self, input_shape: Any) -> None:
        self.built = True

    def get_config(self) -> dict:
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode, "sparse": self.sparse}


class Hashing(PreprocessingLayer):
    """Strings (or integers, hashed as their decimal text) to bins in [0, num_bins) with TF's
    FarmHash Fingerprint64; with a `mask_value`, that value maps to 0 and others to
    [1, num_bins); a `salt` switches to the keyed SipHash (to_hash_bucket_strong)."""

    def __init__(self, num_bins: int, mask_value: Any = None, salt: Any = None,
                 output_mode: str = "int", sparse: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if num_bins is None or int(num_bins) <= 0:
            raise layer_error(f"Hashing: `num_bins` must be > 0, got {num_bins}")
        if output_mode != "int":
            raise layer_error(f"Hashing: only output_mode='int' is supported, got "
                              f"{output_mode!r}")
        if isinstance(salt, int):
            salt = [salt, salt]
        self.num_bins, self.mask_value, self.salt = int(num_bins), mask_value, salt
        self.output_mode, self.sparse = output_mode, sparse

    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, tf.RaggedTensor):  # a bucket per entry, as Keras
            return inputs.with_flat_values(self.call(inputs.flat_values))
        x = tf.convert_to_tensor(inputs)
        text = x if x.dtype == tf.string else tf.strings.as_string(x)
        bins = self.num_bins - (self.mask_value is not None)
        if self.salt is not None:
            hashed = tf.strings.to_hash_bucket_strong(text, bins, self.salt)
        else:
            hashed = tf.strings.to_hash_bucket_fast(text, bins)
        if self.mask_value is None:
            return hashed
        mask = tf.equal(x, tf.constant(self.mask_value, x.dtype))
        return tf.where(mask, tf.zeros_like(hashed), hashed + 1)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt,
                "mask_value": self.mask_value, "output_mode": self.output_mode,
                "sparse": self.sparse}
