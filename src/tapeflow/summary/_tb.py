"""The ``tensorboard`` package, imported on first use with an actionable error."""

from __future__ import annotations

import importlib
from typing import Any


def module(name: str) -> Any:
    """``tensorboard.<name>`` (protos, plugin summaries, the event-file writer)."""
    try:
        return importlib.import_module(f"tensorboard.{name}")
    except ImportError as e:
        raise ImportError("TensorBoard summaries are written with the `tensorboard` package's "
                          "protos and event-file writer, which is not installed: "
                          "pip install 'tapeflow[tensorboard]'") from e


def proto(name: str) -> Any:
    return module(f"compat.proto.{name}")
