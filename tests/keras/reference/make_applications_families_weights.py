"""Small Keras-made weight files for tests/keras/test_applications_families.py: for one model
per family (built by tf-keras 2.21 with weights=None, as recorded in
applications_families_reference.json.gz), the weights of the sub-model from the input up to
one layer, saved with save_weights to HDF5, and that
sub-model's output on a fixed input. Every weight and batch-norm statistic is drawn from a
seeded NumPy generator, so the files are reproducible and inference uses the statistics.

/work/tfenv/bin/python make_applications_families_weights.py
(writes applications_families/<case>.h5 and applications_families/outputs.npz)
"""

import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np  # noqa: E402
import tf_keras as keras  # noqa: E402

# case of applications_families_reference.json.gz -> (module, the sub-model's last layer)
CASES = {
    "MobileNet/alpha0.25_dm2_classes7": ("mobilenet", "conv_pw_6_relu"),
    "MobileNetV3Small/top32": ("mobilenet_v3", "expanded_conv_4/Add"),
    "EfficientNetB1/top32": ("efficientnet", "block2a_project_bn"),
    "ResNet152V2/top32": ("resnet_v2", "conv2_block3_out"),
    "DenseNet169/top32": ("densenet", "conv2_block1_concat"),
    "VGG19/notop_avg": ("vgg19", "block1_pool"),
    "EfficientNetV2B0/top32": ("efficientnet_v2", "block2b_add"),
    "ConvNeXtTiny/top32": ("convnext", "convnext_tiny_stage_0_block_1_layer_scale"),
    "InceptionResNetV2/notop_avg": ("inception_resnet_v2", "activation_3"),
}
KWARGS = {
    "MobileNet/alpha0.25_dm2_classes7": ("MobileNet", {"alpha": 0.25, "depth_multiplier": 2,
                                                       "classes": 7,
                                                       "input_shape": (64, 48, 3)}),
    "MobileNetV3Small/top32": ("MobileNetV3Small", {"input_shape": (32, 32, 3)}),
    "EfficientNetB1/top32": ("EfficientNetB1", {"input_shape": (32, 32, 3)}),
    "ResNet152V2/top32": ("ResNet152V2", {"input_shape": (32, 32, 3)}),
    "DenseNet169/top32": ("DenseNet169", {"input_shape": (32, 32, 3)}),
    "VGG19/notop_avg": ("VGG19", {"include_top": False, "pooling": "avg",
                                  "input_shape": (32, 32, 3)}),
    "EfficientNetV2B0/top32": ("EfficientNetV2B0", {"input_shape": (32, 32, 3)}),
    "ConvNeXtTiny/top32": ("ConvNeXtTiny", {"input_shape": (32, 32, 3)}),
    "InceptionResNetV2/notop_avg": ("InceptionResNetV2", {"include_top": False, "pooling": "avg",
                                                          "input_shape": (75, 75, 3)}),
}

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "applications_families")
os.makedirs(here, exist_ok=True)
rng = np.random.default_rng(5)


def draw(w):
    """Every weight from `rng` (tf-keras's unseeded initializers differ from run to run):
    kernels ~ N(0, 1/fan_in), scales (`gamma`) and batch-norm variances in [0.5, 1.5], biases,
    shifts and batch-norm means ~ N(0, 0.1)."""
    shape = tuple(w.shape)
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[:-2])) * (1 if "depthwise" in w.name else shape[-2])
        return rng.normal(0, 1 / np.sqrt(fan_in), shape)
    if "gamma" in w.name or "moving_variance" in w.name:
        return rng.uniform(0.5, 1.5, shape)
    return rng.normal(0, 0.1, shape)


outputs = {}
for case, (module, last) in CASES.items():
    keras.backend.clear_session()
    name, kwargs = KWARGS[case]
    model = getattr(keras.applications, name)(weights=None, **kwargs)
    sub = keras.Model(model.input, model.get_layer(last).output)
    for layer in sub.layers:
        if isinstance(layer, keras.layers.Normalization):
            if layer.weights:
                mean, var, count = layer.get_weights()
                layer.set_weights([rng.normal(0, 0.1, mean.shape),
                                   rng.uniform(0.5, 1.5, var.shape), count])
        elif layer.weights:
            layer.set_weights([draw(w) for w in layer.weights])
    slug = case.replace("/", "_")
    sub.save_weights(os.path.join(here, slug + ".h5"))
    x = rng.uniform(0, 255, (2,) + kwargs["input_shape"]).astype("float32")
    x = getattr(keras.applications, module).preprocess_input(x.copy())
    outputs[slug + "/x"] = x
    outputs[slug + "/y"] = sub(x, training=False).numpy()
    print(case, sub.count_params(), os.path.getsize(os.path.join(here, slug + ".h5")))
np.savez_compressed(os.path.join(here, "outputs.npz"), **outputs)
