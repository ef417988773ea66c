"""Records TensorFlow 2.21's bilinear resize and JPEG decode for tests/data/test_images.py.

Run with TensorFlow 2.21 installed (not tapeflow); writes image_pipeline_values.npz beside this
file:  python tests/data/reference/make_image_pipeline_values.py
Inputs are made here from a fixed NumPy seed and stored in the same file.
"""

import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

SIZES = [(7, 17), (26, 18), (4, 4), (13, 9)]   # down, up, both ways, same size

rng = np.random.default_rng(23)
out = {"u8": rng.integers(0, 256, (2, 13, 9, 3), dtype=np.uint8),
       "f32": (rng.random((2, 13, 9, 1)) * 3 - 1).astype(np.float32),
       "rgba": rng.integers(0, 256, (1, 5, 6, 4), dtype=np.uint8)}
for name in ("u8", "f32", "rgba"):
    for h, w in SIZES:
        out[f"{name}_{h}x{w}"] = tf.image.resize(out[name], [h, w]).numpy()
for i, shape in enumerate([(48, 48, 3), (37, 50, 3)]):
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    data = tf.io.encode_jpeg(img, quality=90)
    out[f"jpeg{i}"] = np.frombuffer(data.numpy(), np.uint8)
    pixels = tf.io.decode_jpeg(data, channels=3)
    out[f"jpeg{i}_pixels"] = pixels.numpy()
    out[f"jpeg{i}_gray"] = tf.io.decode_jpeg(data, channels=1).numpy()
    out[f"jpeg{i}_loaded"] = (tf.image.resize(pixels, [32, 32]) / 255.0).numpy()
np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "image_pipeline_values.npz"), **out)
