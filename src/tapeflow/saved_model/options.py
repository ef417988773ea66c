"""``tf.saved_model.SaveOptions`` / ``LoadOptions``, with TensorFlow's fields and defaults.

tapeflow's SavedModel is its own format (graph JSON + safetensors, docs/saving.md), so the
fields about TF's protos, devices and sharding have nothing to act on; the objects are checked
and accepted so that programs passing them run unchanged."""

from __future__ import annotations

from typing import Any


class SaveOptions:
    """Options for ``tf.saved_model.save`` (TF's fields)."""

    def __init__(self, namespace_whitelist: Any = None, save_debug_info: bool = False,
                 function_aliases: dict | None = None, experimental_debug_stripper: bool = False,
                 experimental_io_device: str | None = None,
                 experimental_variable_policy: Any = None,
                 experimental_custom_gradients: bool = True,
                 experimental_image_format: bool = False, experimental_skip_saver: bool = False,
                 experimental_sharding_callback: Any = None, extra_tags: Any = None):
        if function_aliases is not None and not isinstance(function_aliases, dict):
            raise TypeError(f"SaveOptions: function_aliases must be a dict of name -> "
                            f"tf.function, got {type(function_aliases).__name__}")
        self.namespace_whitelist = list(namespace_whitelist or [])
        self.save_debug_info = save_debug_info
        self.function_aliases = dict(function_aliases or {})
        self.experimental_debug_stripper = experimental_debug_stripper
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = experimental_variable_policy
        self.experimental_custom_gradients = experimental_custom_gradients
        self.experimental_image_format = experimental_image_format
        self.experimental_skip_saver = experimental_skip_saver
        self.experimental_sharding_callback = experimental_sharding_callback
        self.extra_tags = extra_tags


class LoadOptions:
    """Options for ``tf.saved_model.load`` (TF's fields)."""

    def __init__(self, allow_partial_checkpoint: bool = False,
                 experimental_io_device: str | None = None,
                 experimental_skip_checkpoint: bool = False,
                 experimental_variable_policy: Any = None,
                 experimental_load_function_aliases: bool = False):
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint
        self.experimental_variable_policy = experimental_variable_policy
        self.experimental_load_function_aliases = experimental_load_function_aliases


def checked(options: Any, kind: type, where: str) -> Any:
    """`options` if it is None or a `kind`; otherwise a TypeError naming the call."""
    if options is not None and not isinstance(options, kind):
        raise TypeError(f"{where}: options must be a tf.saved_model.{kind.__name__}, got "
                        f"{type(options).__name__}")
    return options
