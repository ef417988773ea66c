"""``image_dataset_from_directory`` and ``text_dataset_from_directory``: a folder per class to a
batched ``tf.data.Dataset`` of (sample, label), with Keras 2's file order, shuffling, splits,
label modes and printed counts."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import tapeflow as tf

IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def _index(directory: str, labels: Any, class_names: Any, formats: tuple, follow_links: bool,
           shuffle: bool, seed: int | None) -> tuple[list, list, list]:
    """Sorted file paths (shuffled with `seed`), their labels and the class names."""
    if not os.path.isdir(directory):
        raise ValueError(f"Could not find directory {directory!r}")
    subdirs = sorted(d for d in os.listdir(directory)
                     if os.path.isdir(os.path.join(directory, d)))
    if class_names is not None:
        missing = sorted(set(class_names) - set(subdirs))
        if labels == "inferred" and missing:
            raise ValueError(f"The `class_names` passed did not match the names of the "
                             f"subdirectories of the target directory. Expected: {subdirs}, "
                             f"but received: {list(class_names)} (missing: {missing})")
        subdirs = list(class_names)
    roots = [(os.path.join(directory, d), i) for i, d in enumerate(subdirs)] \
        if labels == "inferred" else [(directory, 0)]
    paths, found = [], []
    for root, label in roots:
        for base, dirs, files in sorted(os.walk(root, followlinks=follow_links)):
            dirs.sort()
            for name in sorted(files):
                if name.lower().endswith(formats):
                    paths.append(os.path.join(base, name))
                    found.append(label)
    if labels not in ("inferred", None):
        found = list(labels)
        if len(found) != len(paths):
            raise ValueError(f"Expected the lengths of `labels` to match the number of files in "
                             f"the target directory. len(labels) is {len(found)} while we found "
                             f"{len(paths)} files in directory {directory}.")
    if shuffle:
        order = np.random.RandomState(seed if seed is not None else
                                      np.random.randint(1_000_000)).permutation(len(paths))
        paths, found = [paths[i] for i in order], [found[i] for i in order]
    return paths, found, subdirs if labels == "inferred" else []


def _split(paths: list, labels: list, validation_split: float | None, subset: str | None,
           shuffle: bool, seed: int | None) -> list[tuple[list, list, str]]:
    if subset is None:
        return [(paths, labels, "")]
    if validation_split is None or subset not in ("training", "validation", "both"):
        raise ValueError(f"`subset` must be 'training', 'validation' or 'both' and needs a "
                         f"`validation_split`, got subset={subset!r}, "
                         f"validation_split={validation_split!r}")
    if shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide "
                         "a `seed` argument, to make sure that there is no overlap between the "
                         "training and validation subset.")
    held = int(validation_split * len(paths))
    parts = {"training": (paths[:len(paths) - held], labels[:len(labels) - held]),
             "validation": (paths[len(paths) - held:], labels[len(labels) - held:])}
    names = ["training", "validation"] if subset == "both" else [subset]
    return [(*parts[name], name) for name in names]


def _labels_dataset(labels: list, label_mode: str | None, num_classes: int) -> Any:
    values = np.asarray(labels, np.int32)
    if label_mode == "int":
        return tf.data.Dataset.from_tensor_slices(values)
    if label_mode == "binary":
        return tf.data.Dataset.from_tensor_slices(values.astype(np.float32)[:, None])
    if label_mode == "categorical":
        return tf.data.Dataset.from_tensor_slices(np.eye(num_classes, dtype=np.float32)[values])
    raise ValueError(f'`label_mode` argument must be one of "int", "categorical", "binary", or '
                     f"None. Received: label_mode={label_mode}")


def _build(paths: list, labels: list, load: Any, label_mode: str | None, num_classes: int,
           batch_size: int | None, shuffle: bool, seed: int | None, class_names: list) -> Any:
    samples = tf.data.Dataset.from_tensor_slices(np.asarray(paths, dtype=object)).map(load)
    dataset = samples if label_mode is None else tf.data.Dataset.zip(
        (samples, _labels_dataset(labels, label_mode, num_classes)))
    if shuffle and batch_size is not None:
        dataset = dataset.shuffle(buffer_size=batch_size * 8, seed=seed)
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    dataset.class_names = class_names
    dataset.file_paths = paths
    return dataset


def _datasets(directory: str, labels: Any, label_mode: str | None, class_names: Any,
              formats: tuple, kind: str, load: Any, batch_size: int | None, shuffle: bool,
              seed: int | None, validation_split: float | None, subset: str | None,
              follow_links: bool) -> Any:
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple)):
        raise ValueError(f'`labels` argument should be a list/tuple of integer labels, of the '
                         f'same size as the number of {kind} files in the target directory. If '
                         f'you wish to infer the labels from the subdirectory names in the '
                         f'target directory, pass `labels="inferred"`. If you wish to get a '
                         f'dataset that only contains {kind}s (no labels), pass `labels=None`.')
    if labels is None:
        label_mode = None
    paths, found, names = _index(directory, labels, class_names, formats, follow_links, shuffle,
                                 seed)
    num_classes = len(names) if names else (max(found) + 1 if found else 0)
    print(f"Found {len(paths)} files" + (f" belonging to {num_classes} classes." if labels
                                         is not None else "."))
    if label_mode == "binary" and num_classes != 2:
        raise ValueError(f'When passing `label_mode="binary"`, there must be exactly 2 '
                         f"class_names. Received: class_names={names}")
    out = []
    for part_paths, part_labels, name in _split(paths, found, validation_split, subset, shuffle,
                                                seed):
        if name:
            print(f"Using {len(part_paths)} files for {name}.")
        out.append(_build(part_paths, part_labels, load, label_mode, num_classes, batch_size,
                          shuffle, seed, names))
    return out[0] if len(out) == 1 else tuple(out)


def image_dataset_from_directory(directory: str, labels: Any = "inferred",
                                 label_mode: str | None = "int", class_names: Any = None,
                                 color_mode: str = "rgb", batch_size: int | None = 32,
                                 image_size: Any = (256, 256), shuffle: bool = True,
                                 seed: int | None = None, validation_split: float | None = None,
                                 subset: str | None = None, interpolation: str = "bilinear",
                                 follow_links: bool = False, crop_to_aspect_ratio: bool = False,
                                 **kwargs: Any) -> Any:
    """Images in class subfolders as float32 [batch, height, width, channels] plus labels."""
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    if channels is None:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", "grayscale"}}. '
                         f"Received: color_mode={color_mode}")
    size = tuple(int(s) for s in image_size)

    def load(path: Any) -> Any:
        image = tf.io.decode_image(tf.io.read_file(path), channels=channels,
                                   expand_animations=False)
        if crop_to_aspect_ratio:
            from tapeflow.keras.layers.preprocessing.image import smart_resize

            return smart_resize(image, size, interpolation)
        return tf.image.resize(image, size, method=interpolation)

    return _datasets(directory, labels, label_mode, class_names, IMAGE_FORMATS, "image", load,
                     batch_size, shuffle, seed, validation_split, subset, follow_links)


def text_dataset_from_directory(directory: str, labels: Any = "inferred",
                                label_mode: str | None = "int", class_names: Any = None,
                                batch_size: int | None = 32, max_length: int | None = None,
                                shuffle: bool = True, seed: int | None = None,
                                validation_split: float | None = None, subset: str | None = None,
                                follow_links: bool = False) -> Any:
    """``.txt`` files in class subfolders as string tensors (cut to `max_length` characters)."""

    def load(path: Any) -> Any:
        text = tf.io.read_file(path)
        return text if max_length is None else tf.strings.substr(text, 0, max_length)

    return _datasets(directory, labels, label_mode, class_names, (".txt",), "text", load,
                     batch_size, shuffle, seed, validation_split, subset, follow_links)
