"""TensorFlow's error classes, plus the helper that finds the user's own source line."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class OpError(Exception):
    """Base class of TF-style runtime errors (``tf.errors.OpError``)."""

    def __init__(self, node_def=None, op=None, message: str = "", *args):
        if message == "" and isinstance(node_def, str) and op is None:
            message, node_def = node_def, None
        super().__init__(message)
        self.message = message
        self.node_def = node_def
        self.op = op

    def __str__(self) -> str:
        return self.message


class CancelledError(OpError):
    """An operation or step was cancelled."""


class UnknownError(OpError):
    """An error that fits no other class (e.g. an unpicklable worker exception)."""


class InvalidArgumentError(OpError, ValueError):
    """An op got an argument of the wrong shape, dtype or value."""


class DeadlineExceededError(OpError):
    """An operation ran past its deadline."""


class NotFoundError(OpError):
    """A file or other requested entity does not exist."""


class AlreadyExistsError(OpError):
    """An entity that should be new already exists."""


class PermissionDeniedError(OpError):
    """The caller may not perform the operation."""


class ResourceExhaustedError(OpError):
    """Memory or another resource ran out."""


class FailedPreconditionError(OpError):
    """The system is not in a state the op needs (e.g. uninitialized variable)."""


class AbortedError(OpError):
    """An operation was aborted, typically by a concurrency conflict."""


class OutOfRangeError(OpError):
    """An iteration went past the end of its input (end of a dataset)."""


class UnimplementedError(OpError):
    """The operation is not supported."""


class InternalError(OpError):
    """An internal invariant was broken: a bug in tapeflow."""


class UnavailableError(OpError):
    """A service is temporarily unavailable."""


class DataLossError(OpError):
    """Data is corrupted or lost (a bad checksum in a record file)."""


class OperatorNotAllowedInGraphError(TypeError):
    """A tensor was used as a Python bool/iterable where only graph ops are allowed."""


def user_frame(skip_internal: bool = True):
    """The innermost stack frame that belongs to user code (outside the tapeflow package)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_PACKAGE_DIR) or fn.startswith("<tapeflow")) or not skip_internal:
            return f
        f = f.f_back
    return None


def user_location() -> str:
    """'file:line' of the user's call site, for error messages."""
    f = user_frame()
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def user_line() -> str:
    """'  File "x.py", line 3, in fn\\n    source' of the user's call site."""
    import linecache

    f = user_frame()
    if f is None:
        return ""
    src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f'  File "{f.f_code.co_filename}", line {f.f_lineno}, in {f.f_code.co_name}\n    {src}'
