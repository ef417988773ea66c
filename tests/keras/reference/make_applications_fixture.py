"""A small Keras-made weight file for tests/keras/test_applications.py: the stem and first
inverted-residual block of tf-keras's MobileNetV2(alpha=0.35) (weights saved from a sub-model,
so the file holds only those layers, in Keras's HDF5 layout), and that sub-model's output on a
fixed input.

/work/tfenv/bin/python make_applications_fixture.py
(writes mobilenetv2_stem.h5 and mobilenetv2_stem_output.npz)
"""

import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
tf.random.set_seed(3)
model = keras.applications.MobileNetV2(alpha=0.35, include_top=False, weights=None,
                                       input_shape=(32, 32, 3))
rng = np.random.default_rng(3)
for layer in model.layers:  # non-trivial batch-norm statistics, so inference uses them
    if isinstance(layer, keras.layers.BatchNormalization):
        gamma, beta, mean, var = layer.get_weights()
        layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape), rng.normal(0, 0.1, beta.shape),
                           rng.normal(0, 0.1, mean.shape), rng.uniform(0.5, 1.5, var.shape)])
stem = keras.Model(model.input, model.get_layer("expanded_conv_project_BN").output)
stem.save_weights(os.path.join(here, "mobilenetv2_stem.h5"))
x = rng.uniform(0, 255, (2, 32, 32, 3)).astype("float32")
x = keras.applications.mobilenet_v2.preprocess_input(x.copy())
np.savez_compressed(os.path.join(here, "mobilenetv2_stem_output.npz"), x=x,
                    y=stem(x, training=False).numpy(),
                    layers=np.array([layer.name for layer in stem.layers if layer.weights]))
