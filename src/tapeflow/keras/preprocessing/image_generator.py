"""``tf.keras.preprocessing.image.ImageDataGenerator``: Keras 2's NumPy image augmentation and
normalisation, fed to ``fit`` batch by batch (``flow`` gives a ``keras.utils.Sequence``).

Semantics are tf-keras 2.21's, draw for draw: ``get_random_transform`` takes its random numbers
from NumPy's global generator in Keras's order (rotation, height shift, width shift, shear,
zoom pair, horizontal flip, vertical flip, channel shift, brightness), and an iterator with a
`seed` reseeds it with ``seed + batches seen`` before each batch, so a seeded ``flow`` gives the
same batches as tf-keras's. ``standardize`` applies, in order: ``preprocessing_function``,
``rescale``, samplewise centering / std normalisation, featurewise ones (statistics from
``fit``), ZCA whitening.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np

from tapeflow.keras.engine.sequence import Sequence
from tapeflow.keras.preprocessing.image_affine import (
    apply_affine_transform,
    apply_brightness_shift,
    apply_channel_shift,
    flip_axis,
)


class Iterator(Sequence):
    """Batches of `n` samples as a ``Sequence`` (``it[i]``) and as an endless iterator
    (``next(it)``), shuffled per epoch when asked; subclasses build a batch from indices."""

    white_list_formats = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed: int | None):
        self.n = n
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array: np.ndarray | None = None
        self.index_generator = self._flow_index()

    def _set_index_array(self) -> None:
        self.index_array = np.random.permutation(self.n) if self.shuffle else np.arange(self.n)

    def __getitem__(self, idx: int) -> Any:
        if idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length "
                             f"{len(self)}")
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        return self._get_batches_of_transformed_samples(
            self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)])

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self) -> None:
        self._set_index_array()

    def reset(self) -> None:
        self.batch_index = 0

    def _flow_index(self) -> Any:
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            current = 0 if self.n == 0 else (self.batch_index * self.batch_size) % self.n
            self.batch_index = self.batch_index + 1 if self.n > current + self.batch_size else 0
            self.total_batches_seen += 1
            yield self.index_array[current:current + self.batch_size]

    def __iter__(self) -> Iterator:
        return self

    def __next__(self) -> Any:
        return self.next()

    def next(self) -> Any:
        """The next batch (the epoch wraps around; a new permutation each epoch)."""
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must build batches")


class NumpyArrayIterator(Iterator):
    """`Iterator` over in-memory images `x` (rank 4), labels `y` and sample weights, each
    image augmented and standardised by `image_data_generator`. `x` may be ``(images,
    extra)`` / ``(images, [extras])``: the extra arrays are batched alongside, untouched."""

    def __init__(self, x: Any, y: Any, image_data_generator: ImageDataGenerator,
                 batch_size: int = 32, shuffle: bool = False, sample_weight: Any = None,
                 seed: int | None = None, data_format: str | None = None,
                 save_to_dir: str | None = None, save_prefix: str = "",
                 save_format: str = "png", subset: str | None = None,
                 ignore_class_split: bool = False, dtype: Any = None):
        from tapeflow.keras import backend

        self.data_format = data_format or backend.image_data_format()
        self.dtype = dtype or backend.floatx()
        x, x_misc = _split_misc(x)
        _same_length("`x` (images tensor) and `y` (labels)", x, y, "y")
        _same_length("`x` (images tensor) and `sample_weight`", x, sample_weight,
                     "sample_weight")
        if subset is not None:
            x, x_misc, y, sample_weight = _subset(
                subset, x, x_misc, y, sample_weight,
                image_data_generator._validation_split, ignore_class_split)
        self.x = np.asarray(x, dtype=self.dtype)
        self.x_misc = x_misc
        if self.x.ndim != 4:
            raise ValueError("Input data in `NumpyArrayIterator` should have rank 4. You "
                             f"passed an array with shape {self.x.shape}")
        channels_axis = 3 if self.data_format == "channels_last" else 1
        if self.x.shape[channels_axis] not in {1, 3, 4}:
            warnings.warn(f'NumpyArrayIterator is set to use the data format convention '
                          f'"{self.data_format}" (channels on axis {channels_axis}), i.e. '
                          f"expected either 1, 3, or 4 channels on axis {channels_axis}. "
                          f"However, it was passed an array with shape {self.x.shape} "
                          f"({self.x.shape[channels_axis]} channels).", stacklevel=2)
        self.y = None if y is None else np.asarray(y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        self.image_data_generator = image_data_generator
        self.save_to_dir, self.save_prefix = save_to_dir, save_prefix
        self.save_format = save_format
        super().__init__(self.x.shape[0], batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        gen = self.image_data_generator
        batch_x = np.zeros((len(index_array),) + self.x.shape[1:], dtype=self.dtype)
        for i, j in enumerate(index_array):
            params = gen.get_random_transform(self.x[j].shape)
            batch_x[i] = gen.standardize(gen.apply_transform(self.x[j].astype(self.dtype),
                                                             params))
        if self.save_to_dir:
            self._save(batch_x, index_array)
        miscs = [xx[index_array] for xx in self.x_misc]
        inputs = [batch_x] + miscs if miscs else batch_x
        if self.y is None:
            return inputs
        if self.sample_weight is None:
            return inputs, self.y[index_array]
        return inputs, self.y[index_array], self.sample_weight[index_array]

    def _save(self, batch_x: np.ndarray, index_array: np.ndarray) -> None:
        import os

        from tapeflow.keras.utils.image_utils import array_to_img

        for i, j in enumerate(index_array):
            img = array_to_img(batch_x[i], self.data_format, scale=True)
            name = f"{self.save_prefix}_{j}_{np.random.randint(1e4)}.{self.save_format}"
            img.save(os.path.join(self.save_to_dir, name))


def _split_misc(x: Any) -> tuple[Any, list]:
    if not isinstance(x, (tuple, list)):
        return x, []
    misc = [np.asarray(x[1])] if not isinstance(x[1], list) else [np.asarray(v) for v in x[1]]
    for extra in misc:
        if len(x[0]) != len(extra):
            raise ValueError("All of the arrays in `x` should have the same length. Found a "
                             f"pair with: len(x[0]) = {len(x[0])}, len(x[?]) = {len(extra)}")
    return x[0], misc


def _same_length(what: str, x: Any, other: Any, name: str) -> None:
    if other is not None and len(x) != len(other):
        raise ValueError(f"{what} should have the same length. Found: x.shape = "
                         f"{np.asarray(x).shape}, {name}.shape = {np.asarray(other).shape}")


def _subset(subset: str, x: Any, x_misc: list, y: Any, sample_weight: Any, split: float,
            ignore_class_split: bool) -> tuple:
    """The 'validation' (first `split` of the samples) or 'training' (the rest) part."""
    if subset not in {"training", "validation"}:
        raise ValueError(f'Invalid subset name: {subset}; expected "training" or '
                         '"validation".')
    cut = int(len(x) * split)
    if y is not None and not ignore_class_split and not np.array_equal(
            np.unique(y[:cut]), np.unique(y[cut:])):
        raise ValueError("Training and validation subsets have different number of classes "
                         "after the split. If your numpy arrays are sorted by the label, you "
                         "might want to shuffle them.")
    part = slice(None, cut) if subset == "validation" else slice(cut, None)
    return (x[part], [np.asarray(v[part]) for v in x_misc],
            None if y is None else y[part],
            None if sample_weight is None else sample_weight[part])


def _zoom_range(zoom_range: Any) -> list:
    if isinstance(zoom_range, (float, int)):
        return [1 - zoom_range, 1 + zoom_range]
    if len(zoom_range) == 2 and all(isinstance(v, (float, int)) for v in zoom_range):
        return [zoom_range[0], zoom_range[1]]
    raise ValueError(f"`zoom_range` should be a float or a tuple or list of two floats. "
                     f"Received: {zoom_range}")


def _shift(shift_range: Any, size: int) -> float:
    """One shift draw, as Keras: from a list of values (or [-n, n] ints) with a random
    sign, else uniform in [-f, f]; fractions below 1 are of the image size."""
    try:
        shift = np.random.choice(shift_range)
        shift *= np.random.choice([-1, 1])
    except ValueError:  # a float range
        shift = np.random.uniform(-shift_range, shift_range)
    if np.max(shift_range) < 1:
        shift *= size
    return shift


class ImageDataGenerator:
    """Random augmentation and normalisation of image batches (see the module docstring).

    >>> gen = ImageDataGenerator(rescale=1 / 255, rotation_range=20, horizontal_flip=True)
    >>> model.fit(gen.flow(x_train, y_train, batch_size=32, seed=1), epochs=5)
    """

    def __init__(self, featurewise_center: bool = False, samplewise_center: bool = False,
                 featurewise_std_normalization: bool = False,
                 samplewise_std_normalization: bool = False, zca_whitening: bool = False,
                 zca_epsilon: float = 1e-6, rotation_range: float = 0,
                 width_shift_range: Any = 0.0, height_shift_range: Any = 0.0,
                 brightness_range: Any = None, shear_range: float = 0.0,
                 zoom_range: Any = 0.0, channel_shift_range: float = 0.0,
                 fill_mode: str = "nearest", cval: float = 0.0, horizontal_flip: bool = False,
                 vertical_flip: bool = False, rescale: float | None = None,
                 preprocessing_function: Any = None, data_format: str | None = None,
                 validation_split: float = 0.0, interpolation_order: int = 1,
                 dtype: Any = None):
        from tapeflow.keras import backend

        data_format = data_format or backend.image_data_format()
        if data_format not in {"channels_last", "channels_first"}:
            raise ValueError('`data_format` should be `"channels_last"` (channel after row and '
                             'column) or `"channels_first"` (channel before row and column). '
                             f"Received: {data_format}")
        if validation_split and not 0 < validation_split < 1:
            raise ValueError("`validation_split` must be strictly between 0 and 1.  Received: "
                             f"{validation_split}")
        if brightness_range is not None and (
                not isinstance(brightness_range, (tuple, list)) or len(brightness_range) != 2):
            raise ValueError("`brightness_range should be tuple or list of two floats. "
                             f"Received: {brightness_range}")
        self.featurewise_center = featurewise_center or zca_whitening or \
            (featurewise_std_normalization and not zca_whitening)
        self.samplewise_center = samplewise_center or samplewise_std_normalization
        self.featurewise_std_normalization = featurewise_std_normalization and not zca_whitening
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening, self.zca_epsilon = zca_whitening, zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range, self.height_shift_range = width_shift_range, height_shift_range
        self.shear_range = shear_range
        self.zoom_range = _zoom_range(zoom_range)
        self.channel_shift_range = channel_shift_range
        self.fill_mode, self.cval = fill_mode, cval
        self.horizontal_flip, self.vertical_flip = horizontal_flip, vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.dtype = dtype or backend.floatx()
        self.interpolation_order = interpolation_order
        self.data_format = data_format
        self.channel_axis, self.row_axis, self.col_axis = \
            (1, 2, 3) if data_format == "channels_first" else (3, 1, 2)
        self._validation_split = validation_split
        self.brightness_range = brightness_range
        self.mean = self.std = self.zca_whitening_matrix = None
        _warn_overrides(zca_whitening, featurewise_center, featurewise_std_normalization,
                        samplewise_center, samplewise_std_normalization)

    def flow(self, x: Any, y: Any = None, batch_size: int = 32, shuffle: bool = True,
             sample_weight: Any = None, seed: int | None = None,
             save_to_dir: str | None = None, save_prefix: str = "", save_format: str = "png",
             ignore_class_split: bool = False, subset: str | None = None) -> NumpyArrayIterator:
        """Augmented, standardised batches of `x` (with `y` and `sample_weight`), as a
        ``keras.utils.Sequence`` that ``fit`` takes; `subset` picks the 'training' or
        'validation' part of ``validation_split``."""
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle,
                                  sample_weight=sample_weight, seed=seed,
                                  data_format=self.data_format, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format,
                                  ignore_class_split=ignore_class_split, subset=subset,
                                  dtype=self.dtype)

    def flow_from_directory(self, directory: str, target_size: tuple = (256, 256),
                            color_mode: str = "rgb", classes: list | None = None,
                            class_mode: str | None = "categorical", batch_size: int = 32,
                            shuffle: bool = True, seed: int | None = None,
                            save_to_dir: str | None = None, save_prefix: str = "",
                            save_format: str = "png", follow_links: bool = False,
                            subset: str | None = None, interpolation: str = "nearest",
                            keep_aspect_ratio: bool = False) -> Any:
        """Augmented, standardised batches of the images in `directory` (one sub-directory
        per class), resized to `target_size`; see ``DirectoryIterator``."""
        from tapeflow.keras.preprocessing.image_directory import DirectoryIterator

        return DirectoryIterator(directory, self, target_size=target_size,
                                 color_mode=color_mode, keep_aspect_ratio=keep_aspect_ratio,
                                 classes=classes, class_mode=class_mode,
                                 data_format=self.data_format, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir,
                                 save_prefix=save_prefix, save_format=save_format,
                                 follow_links=follow_links, subset=subset,
                                 interpolation=interpolation, dtype=self.dtype)

    def standardize(self, x: np.ndarray) -> np.ndarray:
        """Normalise one image (or a batch) in place where possible, in Keras's order."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        if self.featurewise_center:
            if self.mean is not None:
                x -= self.mean
            else:
                _warn_unfitted("featurewise_center")
        if self.featurewise_std_normalization:
            if self.std is not None:
                x /= self.std + 1e-6
            else:
                _warn_unfitted("featurewise_std_normalization")
        if self.zca_whitening:
            if self.zca_whitening_matrix is not None:
                flat = x.reshape(-1, np.prod(x.shape[-3:]))
                x = np.reshape(flat @ self.zca_whitening_matrix, x.shape)
            else:
                _warn_unfitted("zca_whitening")
        return x

    def get_random_transform(self, img_shape: tuple, seed: int | None = None) -> dict:
        """One draw of every random parameter for an image of `img_shape` (no batch axis):
        theta, tx (rows), ty (columns), shear, zx, zy, flips, channel shift, brightness."""
        if seed is not None:
            np.random.seed(seed)
        theta = np.random.uniform(-self.rotation_range, self.rotation_range) \
            if self.rotation_range else 0
        tx = _shift(self.height_shift_range, img_shape[self.row_axis - 1]) \
            if self.height_shift_range else 0
        ty = _shift(self.width_shift_range, img_shape[self.col_axis - 1]) \
            if self.width_shift_range else 0
        shear = np.random.uniform(-self.shear_range, self.shear_range) if self.shear_range \
            else 0
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_horizontal = (np.random.random() < 0.5) * self.horizontal_flip
        flip_vertical = (np.random.random() < 0.5) * self.vertical_flip
        channel_shift = None if self.channel_shift_range == 0 else \
            np.random.uniform(-self.channel_shift_range, self.channel_shift_range)
        brightness = None if self.brightness_range is None else \
            np.random.uniform(self.brightness_range[0], self.brightness_range[1])
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
                "flip_horizontal": flip_horizontal, "flip_vertical": flip_vertical,
                "channel_shift_intensity": channel_shift, "brightness": brightness}

    def apply_transform(self, x: np.ndarray, transform_parameters: dict) -> np.ndarray:
        """Apply `get_random_transform`'s parameters to one image (rank 3)."""
        row, col, channel = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        p = transform_parameters
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0),
                                   p.get("shear", 0), p.get("zx", 1), p.get("zy", 1),
                                   row_axis=row, col_axis=col, channel_axis=channel,
                                   fill_mode=self.fill_mode, cval=self.cval,
                                   order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            x = apply_channel_shift(x, p["channel_shift_intensity"], channel)
        if p.get("flip_horizontal", False):
            x = flip_axis(x, col)
        if p.get("flip_vertical", False):
            x = flip_axis(x, row)
        if p.get("brightness") is not None:
            x = apply_brightness_shift(x, p["brightness"], False)
        return x

    def random_transform(self, x: np.ndarray, seed: int | None = None) -> np.ndarray:
        """One image, randomly augmented."""
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x: Any, augment: bool = False, rounds: int = 1,
            seed: int | None = None) -> None:
        """Per-channel mean and std (and the ZCA matrix) of the images `x` (rank 4), after
        ``rescale`` and, with `augment`, `rounds` augmented copies, for `standardize`."""
        x = np.array(x, dtype=self.dtype)  # a copy: rescaled in place below
        if x.ndim != 4:
            raise ValueError(f"Input to `.fit()` should have rank 4. Got array with shape: "
                             f"{x.shape}")
        if x.shape[self.channel_axis] not in {1, 3, 4}:
            warnings.warn(f"Expected input to be images (as Numpy array) following the data "
                          f'format convention "{self.data_format}" (channels on axis '
                          f"{self.channel_axis}), i.e. expected either 1, 3 or 4 channels on "
                          f"axis {self.channel_axis}. However, it was passed an array with "
                          f"shape {x.shape} ({x.shape[self.channel_axis]} channels).",
                          stacklevel=2)
        if seed is not None:
            np.random.seed(seed)
        if self.rescale:
            x *= self.rescale
        if augment:
            augmented = np.zeros((rounds * x.shape[0],) + x.shape[1:], dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    augmented[i + r * x.shape[0]] = self.random_transform(x[i])
            x = augmented
        shape = [1, 1, 1]
        shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=(0, self.row_axis, self.col_axis)), shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=(0, self.row_axis, self.col_axis)), shape)
            x /= self.std + 1e-6
        if self.zca_whitening:
            flat = np.reshape(x, (len(x), -1))
            u, s, _ = np.linalg.svd(flat.T, full_matrices=False)
            s_inv = np.sqrt(len(x)) / (s + self.zca_epsilon)
            self.zca_whitening_matrix = (u * s_inv).dot(u.T)


def _warn_unfitted(option: str) -> None:
    warnings.warn(f"This ImageDataGenerator specifies `{option}`, but it hasn't been fit on "
                  "any training data. Fit it first by calling `.fit(numpy_data)`.",
                  stacklevel=3)


def _warn_overrides(zca: bool, f_center: bool, f_std: bool, s_center: bool,
                    s_std: bool) -> None:
    """Keras's warnings when one option switches another on or off."""
    if zca and not f_center:
        warnings.warn("This ImageDataGenerator specifies `zca_whitening`, which overrides "
                      "setting of `featurewise_center`.", stacklevel=3)
    if zca and f_std:
        warnings.warn("This ImageDataGenerator specifies `zca_whitening` which overrides "
                      "setting of`featurewise_std_normalization`.", stacklevel=3)
    if f_std and not f_center:
        warnings.warn("This ImageDataGenerator specifies `featurewise_std_normalization`, "
                      "which overrides setting of `featurewise_center`.", stacklevel=3)
    if s_std and not s_center:
        warnings.warn("This ImageDataGenerator specifies `samplewise_std_normalization`, "
                      "which overrides setting of `samplewise_center`.", stacklevel=3)
