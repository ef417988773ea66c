"""``tf.keras.preprocessing.image``: reading, writing and converting images (``load_img``,
``img_to_array``, ``array_to_img``, ``save_img``) and ``smart_resize`` (centre-crop to the
target aspect ratio, then resize)."""

from tapeflow.keras.layers.preprocessing.image import smart_resize
from tapeflow.keras.utils.image_utils import array_to_img, img_to_array, load_img, save_img

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]
