"""``tf.keras.preprocessing.image``: reading, writing and converting images (``load_img``,
``img_to_array``, ``array_to_img``, ``save_img``), ``smart_resize`` (centre-crop to the target
aspect ratio, then resize), and Keras 2's NumPy augmentation: ``ImageDataGenerator`` with its
iterators, ``apply_affine_transform`` and the ``random_*`` helpers."""

from tapeflow.keras.layers.preprocessing.image import smart_resize
from tapeflow.keras.preprocessing.image_affine import (
    apply_affine_transform,
    apply_brightness_shift,
    apply_channel_shift,
    random_brightness,
    random_channel_shift,
    random_rotation,
    random_shear,
    random_shift,
    random_zoom,
)
from tapeflow.keras.preprocessing.image_directory import DirectoryIterator
from tapeflow.keras.preprocessing.image_generator import (
    ImageDataGenerator,
    Iterator,
    NumpyArrayIterator,
)
from tapeflow.keras.utils.image_utils import array_to_img, img_to_array, load_img, save_img

__all__ = ["DirectoryIterator", "ImageDataGenerator", "Iterator", "NumpyArrayIterator",
           "apply_affine_transform", "apply_brightness_shift", "apply_channel_shift",
           "array_to_img", "img_to_array", "load_img", "random_brightness",
           "random_channel_shift", "random_rotation", "random_shear", "random_shift",
           "random_zoom", "save_img", "smart_resize"]
