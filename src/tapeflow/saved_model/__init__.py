"""``tf.saved_model``: objects, Keras models and tf.functions saved as directories that load
without the Python code that defined them (graph IR as versioned JSON + safetensors
variables); see docs/saving.md."""

from tapeflow.saved_model.graph_json import VERSION, FormatError
from tapeflow.saved_model.load import load
from tapeflow.saved_model.save import SERVING as DEFAULT_SERVING_SIGNATURE_DEF_KEY
from tapeflow.saved_model.save import save

SERVING = "serve"


def contains_saved_model(export_dir: str) -> bool:
    import os

    return os.path.isfile(os.path.join(os.fspath(export_dir), "saved_model.json"))


__all__ = ["DEFAULT_SERVING_SIGNATURE_DEF_KEY", "SERVING", "VERSION", "FormatError",
           "contains_saved_model", "load", "save"]
