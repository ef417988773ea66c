"""Records TensorFlow 2.21's tf.image results for tests/image/test_image_reference.py.

Run with TensorFlow 2.21 installed (not tapeflow); writes image_values.npz beside this file:
    python tests/image/reference/make_image_values.py
Inputs are made here from a fixed NumPy seed and stored in the same file.
"""

import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from image_cases import image_cases  # noqa: E402

rng = np.random.RandomState(7)
img = rng.rand(2, 9, 12, 3).astype(np.float32)
img[0, 0, 0] = [0.5, 0.5, 0.5]                # a gray pixel: hue 0
img_u8 = (rng.rand(9, 12, 3) * 255).astype(np.uint8)
other = np.clip(img + rng.normal(0, 0.1, img.shape).astype(np.float32), 0, 1)
big = rng.rand(1, 40, 44, 3).astype(np.float32)
big2 = np.clip(big + rng.normal(0, 0.2, big.shape).astype(np.float32), 0, 1)
boxes = np.array([[0.1, 0.2, 0.8, 0.9], [-0.2, 0.0, 0.5, 1.3], [0.3, 0.3, 0.3, 0.7]],
                 np.float32)
box_indices = np.array([0, 1, 1], np.int32)
hsv = tf.image.rgb_to_hsv(img).numpy()

out = {"img": img, "img_u8": img_u8, "other": other, "big": big, "big2": big2,
       "boxes": boxes, "box_indices": box_indices}
cases = image_cases(tf, {**out, "hsv": hsv})
for name, fn in cases.items():
    out[name] = np.asarray(fn())

here = os.path.dirname(os.path.abspath(__file__))
np.savez_compressed(os.path.join(here, "image_values.npz"), **out)
print(f"wrote {len(cases)} results")
