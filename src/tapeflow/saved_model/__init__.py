"""``tf.saved_model``: objects, Keras models and tf.functions saved as directories that load
without the Python code that defined them (graph IR as versioned JSON + safetensors
variables); see docs/saving.md."""

from tapeflow.saved_model.graph_json import VERSION, FormatError
from tapeflow.saved_model.load import load
from tapeflow.saved_model.options import LoadOptions, SaveOptions
from tapeflow.saved_model.save import SERVING as DEFAULT_SERVING_SIGNATURE_DEF_KEY
from tapeflow.saved_model.save import save

# TensorFlow's tag, signature and directory constants (tag_constants, signature_constants)
SERVING = "serve"
TRAINING = "train"
GPU = "gpu"
TPU = "tpu"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
PREDICT_INPUTS = "inputs"
PREDICT_OUTPUTS = "outputs"
CLASSIFY_INPUTS = "inputs"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
REGRESS_INPUTS = "inputs"
REGRESS_OUTPUTS = "outputs"
ASSETS_DIRECTORY = "assets"
ASSETS_KEY = "saved_model_assets"
VARIABLES_DIRECTORY = "variables"  # tapeflow's variables/variables.safetensors lives there


def contains_saved_model(export_dir: str) -> bool:
    import os

    return os.path.isfile(os.path.join(os.fspath(export_dir), "saved_model.json"))


__all__ = ["ASSETS_DIRECTORY", "ASSETS_KEY", "CLASSIFY_INPUTS", "CLASSIFY_METHOD_NAME",
           "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "DEFAULT_SERVING_SIGNATURE_DEF_KEY",
           "GPU", "LoadOptions", "PREDICT_INPUTS", "PREDICT_METHOD_NAME", "PREDICT_OUTPUTS",
           "REGRESS_INPUTS", "REGRESS_METHOD_NAME", "REGRESS_OUTPUTS", "SERVING", "SaveOptions",
           "TPU", "TRAINING", "VARIABLES_DIRECTORY", "VERSION", "FormatError",
           "contains_saved_model", "load", "save"]
