"""Record tf-keras 2.21's architectures for the applications added after the first eight
(tests/keras/test_applications_families.py): per case the constructor's keyword arguments,
each layer's name, class, parameter count and weight shapes in model order, the weight names,
the totals and the output shape. Built with weights=None on small inputs.

/work/tfenv/bin/python make_applications_families_reference.py
(writes applications_families_reference.json.gz; from tf_keras 2.21)
"""

import gzip
import json
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import tf_keras as keras  # noqa: E402

TOP32 = {"include_top": True, "input_shape": [32, 32, 3]}
CASES = {
    "ResNet101/top32": ("ResNet101", TOP32),
    "ResNet152/top32": ("ResNet152", TOP32),
    "ResNet101V2/top32": ("ResNet101V2", TOP32),
    "ResNet152V2/top32": ("ResNet152V2", TOP32),
    "DenseNet169/top32": ("DenseNet169", TOP32),
    "DenseNet201/top32": ("DenseNet201", TOP32),
    "VGG19/notop_avg": ("VGG19", {"include_top": False, "pooling": "avg",
                                  "input_shape": [32, 32, 3]}),
    "VGG19/top": ("VGG19", {}),
    "MobileNet/top32": ("MobileNet", TOP32),
    "MobileNet/alpha0.25_dm2_classes7": ("MobileNet", {"alpha": 0.25, "depth_multiplier": 2,
                                                       "classes": 7,
                                                       "input_shape": [64, 48, 3]}),
    "MobileNet/notop_max": ("MobileNet", {"include_top": False, "pooling": "max",
                                          "alpha": 0.5}),
    "MobileNetV3Small/top32": ("MobileNetV3Small", TOP32),
    "MobileNetV3Small/alpha0.75_minimalistic": (
        "MobileNetV3Small", {"alpha": 0.75, "minimalistic": True, "classes": 10,
                             "input_shape": [32, 32, 3]}),
    "MobileNetV3Small/alpha1.25_noprep_notop_max": (
        "MobileNetV3Small", {"alpha": 1.25, "include_top": False, "pooling": "max",
                             "include_preprocessing": False}),
    "MobileNetV3Large/top32": ("MobileNetV3Large", TOP32),
    "MobileNetV3Large/minimalistic_nodropout_linear": (
        "MobileNetV3Large", {"minimalistic": True, "dropout_rate": 0.0,
                             "classifier_activation": None, "input_shape": [48, 48, 3]}),
}
for b in range(1, 8):
    CASES[f"EfficientNetB{b}/top32"] = (f"EfficientNetB{b}", TOP32)
for v in ("B0", "B1", "B2", "B3", "S", "M", "L"):
    CASES[f"EfficientNetV2{v}/top32"] = (f"EfficientNetV2{v}", TOP32)
CASES["EfficientNetV2B0/noprep_classes5"] = ("EfficientNetV2B0", {
    "include_preprocessing": False, "classes": 5, "input_shape": [48, 40, 3]})
CASES["EfficientNetV2S/notop_max"] = ("EfficientNetV2S", {
    "include_top": False, "pooling": "max", "input_shape": [32, 32, 3]})
for v in ("Tiny", "Small", "Base", "Large", "XLarge"):
    CASES[f"ConvNeXt{v}/top32"] = (f"ConvNeXt{v}", TOP32)
CASES["ConvNeXtTiny/noprep_notop_max"] = ("ConvNeXtTiny", {
    "include_preprocessing": False, "include_top": False, "pooling": "max",
    "input_shape": [64, 64, 3]})
CASES["InceptionResNetV2/top75"] = ("InceptionResNetV2", {"input_shape": [75, 75, 3]})
CASES["InceptionResNetV2/notop_avg"] = ("InceptionResNetV2", {
    "include_top": False, "pooling": "avg", "input_shape": [75, 75, 3]})
CASES["EfficientNetB3/notop_avg_classes"] = ("EfficientNetB3", {
    "include_top": False, "pooling": "avg", "input_shape": [40, 40, 3]})


def describe(model, name, kwargs):
    return {
        "model": name,
        "kwargs": kwargs,
        "layers": [[layer.name, type(layer).__name__, layer.count_params(),
                    [list(w.shape) for w in layer.weights]] for layer in model.layers],
        "weights": [[w.name, list(w.shape)] for w in model.weights],
        "params": model.count_params(),
        "trainable": sum(int(w.shape.num_elements()) for w in model.trainable_weights),
        "output_shape": list(model.output_shape),
        "name": model.name,
    }


out = {}
for key, (name, kwargs) in CASES.items():
    keras.backend.clear_session()
    model = getattr(keras.applications, name)(weights=None, **kwargs)
    out[key] = describe(model, name, kwargs)
    print(key, model.count_params(), len(model.layers), flush=True)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "applications_families_reference.json.gz")
with gzip.open(path, "wt") as f:
    json.dump(out, f)
