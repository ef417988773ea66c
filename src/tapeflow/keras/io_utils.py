"""Where Keras's messages go: ``tf.keras.utils.enable_interactive_logging`` /
``disable_interactive_logging`` / ``is_interactive_logging_enabled``.

Interactively (the default) progress bars and callback messages are written to stdout; once
disabled, every message goes to the Python logger ``tapeflow.keras`` at INFO level instead
(tf-keras sends them to absl's INFO log), and progress bars print only finished lines. The
setting is per thread, as in tf-keras.
"""

from __future__ import annotations

import logging
import sys
import threading

_state = threading.local()
logger = logging.getLogger("tapeflow.keras")


def enable_interactive_logging() -> None:
    """Write Keras's messages (progress bars, callback notes) to stdout."""
    _state.enable = True


def disable_interactive_logging() -> None:
    """Send Keras's messages to the ``tapeflow.keras`` logger (INFO) instead of stdout."""
    _state.enable = False


def is_interactive_logging_enabled() -> bool:
    """Whether Keras's messages go to stdout (True, the default) or to the logger."""
    return getattr(_state, "enable", True)


def print_msg(message: str, line_break: bool = True) -> None:
    """One Keras message: to stdout interactively, else to the logger."""
    if is_interactive_logging_enabled():
        sys.stdout.write(message + "\n" if line_break else message)
        sys.stdout.flush()
    else:
        logger.info(message)
