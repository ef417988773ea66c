"""``ImageDataGenerator.flow_from_directory`` and its ``DirectoryIterator``: images read from
one sub-directory per class, augmented and standardised batch by batch, as tf-keras 2 does.

Files are listed as tf-keras lists them: classes are the sorted sub-directory names (or the
`classes` given, in that order); inside each class, ``os.walk`` order with directories and
file names sorted; only png/jpg/jpeg/bmp/ppm/tif/tiff files (case-insensitive). With a
generator's ``validation_split``, 'validation' takes the first fraction of every class's
files and 'training' the rest.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tapeflow.keras.preprocessing.image_generator import Iterator

_CLASS_MODES = ("categorical", "binary", "sparse", "input", None)
_CHANNELS = {"rgb": 3, "rgba": 4, "grayscale": 1}


def _class_files(directory: str, formats: tuple, split: tuple | None,
                 follow_links: bool) -> list[str]:
    """The image files under one class directory, relative to its parent, in Keras's order."""
    found = []
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda entry: entry[0]):
        for name in sorted(files):
            if name.lower().endswith(formats):
                found.append(os.path.join(root, name))
    if split:
        found = found[int(split[0] * len(found)):int(split[1] * len(found))]
    base = os.path.basename(directory)
    return [os.path.join(base, os.path.relpath(path, directory)) for path in found]


class DirectoryIterator(Iterator):
    """Batches of images from `directory` (one sub-directory per class), with labels per
    `class_mode`: 'categorical' (one-hot), 'binary' / 'sparse' (class index as float),
    'input' (the images again), or None (images only)."""

    def __init__(self, directory: str, image_data_generator: Any,
                 target_size: tuple = (256, 256), color_mode: str = "rgb",
                 classes: list | None = None, class_mode: str | None = "categorical",
                 batch_size: int = 32, shuffle: bool = True, seed: int | None = None,
                 data_format: str | None = None, save_to_dir: str | None = None,
                 save_prefix: str = "", save_format: str = "png", follow_links: bool = False,
                 subset: str | None = None, interpolation: str = "nearest",
                 keep_aspect_ratio: bool = False, dtype: Any = None):
        from tapeflow.keras import backend

        self.data_format = data_format or backend.image_data_format()
        self.dtype = dtype or backend.floatx()
        self.image_data_generator = image_data_generator
        self.target_size = tuple(target_size)
        self.keep_aspect_ratio = keep_aspect_ratio
        if color_mode not in _CHANNELS:
            raise ValueError(f'Invalid color mode: {color_mode}; expected "rgb", "rgba", or '
                             '"grayscale".')
        self.color_mode = color_mode
        channels = (_CHANNELS[color_mode],)
        self.image_shape = self.target_size + channels \
            if self.data_format == "channels_last" else channels + self.target_size
        self.save_to_dir, self.save_prefix = save_to_dir, save_prefix
        self.save_format, self.interpolation = save_format, interpolation
        self.split = _split(subset, image_data_generator)
        self.subset = subset
        if class_mode not in _CLASS_MODES:
            raise ValueError(f"Invalid class_mode: {class_mode}; expected one of: "
                             f"{set(_CLASS_MODES)}")
        self.class_mode = class_mode
        self.directory = directory
        if not classes:
            classes = [d for d in sorted(os.listdir(directory))
                       if os.path.isdir(os.path.join(directory, d))]
        self.num_classes = len(classes)
        self.class_indices = dict(zip(classes, range(len(classes))))
        self.filenames: list[str] = []
        labels: list[int] = []
        for name in classes:
            files = _class_files(os.path.join(directory, name), self.white_list_formats,
                                 self.split, follow_links)
            self.filenames += files
            labels += [self.class_indices[name]] * len(files)
        self.samples = len(self.filenames)
        self.classes = np.asarray(labels, dtype="int32")
        print(f"Found {self.samples} images belonging to {self.num_classes} classes.")
        self._filepaths = [os.path.join(directory, name) for name in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    @property
    def filepaths(self) -> list[str]:
        return self._filepaths

    @property
    def labels(self) -> np.ndarray:
        return self.classes

    @property
    def sample_weight(self) -> None:
        return None

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        from tapeflow.keras.utils.image_utils import img_to_array, load_img

        gen = self.image_data_generator
        batch_x = np.zeros((len(index_array),) + self.image_shape, dtype=self.dtype)
        for i, j in enumerate(index_array):
            img = load_img(self._filepaths[j], color_mode=self.color_mode,
                           target_size=self.target_size, interpolation=self.interpolation,
                           keep_aspect_ratio=self.keep_aspect_ratio)
            x = img_to_array(img, data_format=self.data_format)
            img.close()
            if gen:
                x = gen.standardize(gen.apply_transform(x, gen.get_random_transform(x.shape)))
            batch_x[i] = x
        if self.save_to_dir:
            self._save(batch_x, index_array)
        if self.class_mode == "input":
            return batch_x, batch_x.copy()
        if self.class_mode in ("binary", "sparse"):
            return batch_x, self.classes[index_array].astype(self.dtype)
        if self.class_mode == "categorical":
            batch_y = np.zeros((len(batch_x), self.num_classes), dtype=self.dtype)
            batch_y[np.arange(len(batch_x)), self.classes[index_array]] = 1.0
            return batch_x, batch_y
        return batch_x

    def _save(self, batch_x: np.ndarray, index_array: np.ndarray) -> None:
        from tapeflow.keras.utils.image_utils import array_to_img

        for i, j in enumerate(index_array):
            img = array_to_img(batch_x[i], self.data_format, scale=True)
            name = f"{self.save_prefix}_{j}_{np.random.randint(1e7)}.{self.save_format}"
            img.save(os.path.join(self.save_to_dir, name))


def _split(subset: str | None, generator: Any) -> tuple | None:
    if subset is None:
        return None
    fraction = generator._validation_split
    if subset == "validation":
        return (0, fraction)
    if subset == "training":
        return (fraction, 1)
    raise ValueError(f'Invalid subset name: {subset};expected "training" or "validation"')
