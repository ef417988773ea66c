"""Records TensorFlow 2.21 / tf-keras numbers for tests/image/test_projective_transform.py.

Run with TensorFlow 2.21 and tf-keras installed (not tapeflow), from the repository root:
    python tests/image/reference/make_projective_values.py
Writes tests/image/reference/projective_values.npz: ``tf.raw_ops.ImageProjectiveTransformV3``
on fixed images for every fill mode and interpolation and several transforms (rotation, zoom,
translation, shear, a true projective map, a degenerate row), and the outputs of Keras's
RandomRotation/RandomZoom/RandomTranslation with fixed factors (lower == upper, so the draw is
known) in training mode. ``CASES``/``LAYER_CASES`` are shared with the test.
"""

import math
import os

import numpy as np

PATH = os.path.join(os.path.dirname(__file__), "projective_values.npz")
H, W = 5, 6
IMAGES = np.random.default_rng(0).uniform(0, 1, (2, H, W, 3)).astype(np.float32)
IMAGES_U8 = (IMAGES * 255).astype(np.uint8)


def _rotation(angle: float) -> list:
    """Keras's get_rotation_matrix for one angle (radians) on an H x W image."""
    c, s = math.cos(angle), math.sin(angle)
    x_off = ((W - 1) - (c * (W - 1) - s * (H - 1))) / 2.0
    y_off = ((H - 1) - (s * (W - 1) + c * (H - 1))) / 2.0
    return [c, -s, x_off, s, c, y_off, 0.0, 0.0]


TRANSFORMS = {
    "rotate": [_rotation(0.7), _rotation(-2.0)],
    "zoom": [[1.6, 0.0, -1.5, 0.0, 0.7, 0.6, 0.0, 0.0]] * 2,
    "translate": [[1.0, 0.0, 2.5, 0.0, 1.0, -1.25, 0.0, 0.0],
                  [1.0, 0.0, -7.0, 0.0, 1.0, 9.5, 0.0, 0.0]],
    "shear": [[1.0, 0.4, -0.3, 0.2, 1.0, 0.1, 0.0, 0.0]] * 2,
    "projective": [[1.1, 0.2, 0.3, -0.1, 0.9, 0.4, 0.05, -0.08],
                   [0.8, -0.3, 1.0, 0.3, 1.2, -0.5, -0.02, 0.03]],
    "degenerate": [[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, -0.5, 0.0]] * 2,  # k == 0 at x = 2
}
# name: (transform, fill_mode, interpolation, output (h, w), uint8 images)
CASES = {}
for _t in TRANSFORMS:
    for _mode in ("REFLECT", "WRAP", "CONSTANT", "NEAREST"):
        for _interp in ("BILINEAR", "NEAREST"):
            CASES[f"{_t}_{_mode}_{_interp}".lower()] = (_t, _mode, _interp, (H, W), False)
CASES["zoom_constant_bilinear_bigger"] = ("zoom", "CONSTANT", "BILINEAR", (7, 4), False)
CASES["rotate_reflect_bilinear_u8"] = ("rotate", "REFLECT", "BILINEAR", (H, W), True)
FILL_VALUE = 0.25

# name: (layer class, constructor kwargs)
LAYER_CASES = {
    "rotation": ("RandomRotation", {"factor": (0.1, 0.1)}),
    "rotation_constant": ("RandomRotation", {"factor": (-0.3, -0.3), "fill_mode": "constant",
                                             "fill_value": 0.5, "interpolation": "nearest"}),
    "zoom": ("RandomZoom", {"height_factor": (-0.3, -0.3)}),
    "zoom_both": ("RandomZoom", {"height_factor": (0.2, 0.2), "width_factor": (-0.4, -0.4),
                                 "fill_mode": "wrap"}),
    "translation": ("RandomTranslation", {"height_factor": (0.2, 0.2),
                                          "width_factor": (-0.3, -0.3)}),
    "translation_nearest": ("RandomTranslation", {"height_factor": (-0.4, -0.4),
                                                  "width_factor": (0.5, 0.5),
                                                  "fill_mode": "nearest"}),
}


def run_case(tf, name: str):
    transform, mode, interp, out_hw, u8 = CASES[name]
    return tf.raw_ops.ImageProjectiveTransformV3(
        images=tf.constant(IMAGES_U8 if u8 else IMAGES),
        transforms=tf.constant(np.array(TRANSFORMS[transform], np.float32)),
        output_shape=tf.constant(list(out_hw), tf.int32), fill_value=tf.constant(FILL_VALUE),
        interpolation=interp, fill_mode=mode)


def main() -> None:
    import tensorflow as tf
    import tf_keras as keras

    out = {name: run_case(tf, name).numpy() for name in CASES}
    for name, (cls, kwargs) in LAYER_CASES.items():
        layer = getattr(keras.layers, cls)(**kwargs)
        out[f"layer/{name}"] = layer(IMAGES, training=True).numpy()
        out[f"layer/{name}/single"] = layer(IMAGES[0], training=True).numpy()
    np.savez_compressed(PATH, **out)


if __name__ == "__main__":
    main()
