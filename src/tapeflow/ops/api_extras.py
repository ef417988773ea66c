"""Small names of TensorFlow's API: ``tf.errors`` status codes and ``tf.autograph`` settings."""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import errors

for _code, _name in enumerate(["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
                               "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                               "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
                               "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                               "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]):
    setattr(errors, _name, _code)  # tf.errors is framework/errors itself, set after ops load


class UnauthenticatedError(errors.OpError):
    """The request lacks valid credentials (status UNAUTHENTICATED)."""


errors.UnauthenticatedError = UnauthenticatedError


_verbosity = {"level": 0, "alsologtostdout": False}


@export("autograph.set_verbosity")
def set_verbosity(level: int, alsologtostdout: bool = False) -> None:
    """Recorded; AutoGraph's conversions are shown with tf.autograph.to_code."""
    _verbosity.update(level=int(level), alsologtostdout=bool(alsologtostdout))


@export("autograph.trace")
def trace(*args: Any) -> None:
    """Print the arguments (at trace time inside tf.function, as TensorFlow's does)."""
    print(*args)

