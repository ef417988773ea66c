"""Argument normalisation shared by the layer families (tuples, padding names, static shapes)."""

from __future__ import annotations

from typing import Any

from tapeflow.framework import errors


def layer_error(message: str) -> ValueError:
    """A ValueError for bad layer arguments or inputs, ending with the user's source line."""
    where = errors.user_line()
    return ValueError(f"{message}\n{where}" if where else message)


def normalize_tuple(value: Any, n: int, name: str, layer: str) -> tuple[int, ...]:
    """An int or an n-sequence of ints -> n-tuple; a clear error naming the layer otherwise."""
    if isinstance(value, int):
        return (value,) * n
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise layer_error(f"{layer}: `{name}` must be an int or a tuple of {n} ints, got "
                         f"{value!r}") from None
    if len(out) != n:
        raise layer_error(f"{layer}: `{name}` must be an int or a tuple of {n} ints, got "
                         f"{value!r}")
    return out


def normalize_padding(value: str, layer: str,
                      allowed: tuple[str, ...] = ("same", "valid")) -> str:
    """'same'/'valid' (any case; 'causal' where allowed) -> the spelling 'SAME'/'VALID'."""
    padding = str(value).lower()
    if padding not in allowed:
        names = " or ".join(repr(a) for a in allowed)
        raise layer_error(f"{layer}: `padding` must be {names}, got {value!r}")
    return padding.upper()


def check_data_format(value: str | None, layer: str) -> None:
    """Only channels_last (NHWC) is supported: the layout of every tapeflow conv kernel."""
    if value not in (None, "channels_last"):
        raise layer_error(f"{layer}: data_format={value!r} is not supported; tapeflow layers use "
                         "'channels_last' (NHWC). Transpose the input with tf.transpose.")


def static_shape(x: Any) -> list:
    """The static shape of a tensor as a list with None for unknown dims."""
    shape = x.shape
    return list(shape.as_tuple()) if hasattr(shape, "as_tuple") else list(shape)
