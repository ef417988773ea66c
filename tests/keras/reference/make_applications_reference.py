"""Record tf-keras 2.21's keras.applications architectures (weights=None) for
tests/keras/test_applications.py: per model, each layer's name, class and parameter count,
the weight names and shapes, the total and the output shape.

/work/tfenv/bin/python make_applications_reference.py  (writes applications_reference.json.gz)
"""

import gzip
import json
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import tf_keras as keras  # noqa: E402

MODELS = ["ResNet50", "ResNet50V2", "MobileNetV2", "VGG16", "DenseNet121", "EfficientNetB0",
          "Xception", "InceptionV3"]
# (suffix, kwargs): the default top, and a headless one on a small input with pooling
CASES = [("top", {}),
         ("notop_avg", {"include_top": False, "pooling": "avg"})]
SMALL = {"Xception": (71, 71, 3), "InceptionV3": (75, 75, 3)}


def describe(model):
    return {
        "layers": [[layer.name, type(layer).__name__, layer.count_params()]
                   for layer in model.layers],
        "weights": [[w.name, list(w.shape)] for w in model.weights],
        "params": model.count_params(),
        "trainable": sum(int(w.shape.num_elements()) for w in model.trainable_weights),
        "output_shape": list(model.output_shape),
        "name": model.name,
    }


out = {}
for name in MODELS:
    for suffix, kwargs in CASES:
        keras.backend.clear_session()
        if suffix != "top":
            kwargs = dict(kwargs, input_shape=SMALL.get(name, (32, 32, 3)))
        model = getattr(keras.applications, name)(weights=None, **kwargs)
        out[f"{name}/{suffix}"] = describe(model)
        print(name, suffix, model.count_params(), len(model.layers))
keras.backend.clear_session()
out["MobileNetV2/alpha0.35_classes7"] = describe(keras.applications.MobileNetV2(
    weights=None, alpha=0.35, classes=7, input_shape=(96, 96, 3)))

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "applications_reference.json.gz")
with gzip.open(path, "wt") as f:
    json.dump(out, f)
