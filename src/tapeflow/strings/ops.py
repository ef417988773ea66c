"""``tf.strings``: string tensors (NumPy object arrays of bytes) and the ops on them.

Each op is a primitive with a NumPy kernel and a shape rule, so it runs eagerly, in
``tf.function`` and in ``tf.data`` maps; none has a gradient (strings are not differentiable,
as in TensorFlow). Ops that split (``split``, ``unicode_decode`` ...) return RaggedTensors; the
elementwise ones accept RaggedTensors and keep their row partition.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.ragged.tensor import RaggedTensor
from tapeflow.strings import hashing

_STR = _dtypes.string
_I64 = _dtypes.int64


def _t(x: Any, dtype: Any = None) -> Any:
    if isinstance(x, (Tensor, RaggedTensor)):
        return x
    return convert_to_tensor(x, dtype)


def _bytes(s: Any) -> bytes:
    return s.encode() if isinstance(s, str) else bytes(s)


def _map(fn: Callable, x: np.ndarray, otype: Any) -> np.ndarray:
    out = np.empty(x.shape, dtype=otype)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    for i, s in enumerate(flat_in):
        flat_out[i] = fn(_bytes(s))
    return out


def _ragged_aware(fn: Callable) -> Callable:
    """Run an elementwise string function on a RaggedTensor's flat values."""

    @functools.wraps(fn)
    def wrapper(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if isinstance(input, RaggedTensor):
            return input.with_flat_values(fn(input.flat_values, *args, **kwargs))
        return fn(input, *args, **kwargs)

    return wrapper


def _same_shape(dtype: Any) -> Callable:
    return lambda x, **attrs: (x[0], dtype)


# --- elementwise --------------------------------------------------------------------------------


@op("StringMap", shape=lambda x, *, fn, dtype: (x[0], dtype))
def _string_map(x, *, fn, dtype):
    return _map(fn, x, object if dtype is _STR else dtype._np)


def _unary(x: Any, fn: Callable, dtype: Any = _STR) -> Tensor:
    return apply(_string_map, _t(x, _STR), fn=fn, dtype=dtype)


@_ragged_aware
def lower(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """ASCII lower case (all of Unicode with encoding='utf-8')."""
    if encoding:
        return _unary(input, lambda s: s.decode(encoding).lower().encode(encoding))
    return _unary(input, bytes.lower)


@_ragged_aware
def upper(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    if encoding:
        return _unary(input, lambda s: s.decode(encoding).upper().encode(encoding))
    return _unary(input, bytes.upper)


@_ragged_aware
def strip(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Remove leading and trailing whitespace."""
    return _unary(input, bytes.strip)


def _utf8_len(s: bytes) -> int:
    return sum(1 for b in s if b & 0xC0 != 0x80)  # count lead bytes, as TF does


@_ragged_aware
def length(input: Any, unit: str = "BYTE", name: str | None = None) -> Tensor:  # noqa: A002
    """Length in bytes, or in UTF-8 characters with unit='UTF8_CHAR'."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"tf.strings.length: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    return _unary(input, len if unit == "BYTE" else _utf8_len, _dtypes.int32)


@_ragged_aware
def regex_full_match(input: Any, pattern: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Whether each whole string matches `pattern` (RE2 syntax; Python re here)."""
    compiled = re.compile(_bytes(_scalar_str(pattern)))
    return _unary(input, lambda s: compiled.fullmatch(s) is not None, _dtypes.bool)


@_ragged_aware
def regex_replace(input: Any, pattern: Any, rewrite: Any,  # noqa: A002
                  replace_global: bool = True, name: str | None = None) -> Tensor:
    r"""Replace matches of `pattern` with `rewrite` (``\1`` groups; ``\0`` the whole match)."""
    compiled = re.compile(_bytes(_scalar_str(pattern)))
    repl = re.sub(rb"\\0", rb"\\g<0>", _bytes(_scalar_str(rewrite)))
    count = 0 if replace_global else 1
    return _unary(input, lambda s: compiled.sub(repl, s, count=count))


def _scalar_str(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.numpy().item() if hasattr(x, "numpy") else x
    return x


@_ragged_aware
def to_number(string_tensor: Any, out_type: Any = _dtypes.float32,
              name: str | None = None) -> Tensor:
    """Parse each string as a number of `out_type`."""
    out_type = _dtypes.as_dtype(out_type)
    parse = int if out_type.is_integer else float

    def one(s: bytes) -> Any:
        try:
            return parse(s.decode().strip())
        except ValueError:
            raise ValueError(f"StringToNumber: {s!r} is not a valid {out_type.name}") from None

    return _unary(string_tensor, one, out_type)


@op("AsString", shape=lambda x, *, fmt: (x[0], _STR))
def _as_string(x, *, fmt):
    out = np.empty(x.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(x.reshape(-1)):
        if x.dtype == bool:
            flat[i] = b"true" if v else b"false"
        else:
            flat[i] = (fmt % v).encode()
    return out


@_ragged_aware
def as_string(input: Any, precision: int = -1, scientific: bool = False,  # noqa: A002
              shortest: bool = False, width: int = -1, fill: str = "",
              name: str | None = None) -> Tensor:
    """Numbers to strings, formatted as TensorFlow does (floats: %f with 6 digits)."""
    x = _t(input)
    flags = fill if fill in ("0", " ", "-", "+") else ""
    w = str(width) if width > -1 else ""
    if x.dtype.is_floating or x.dtype.is_complex:
        p = f".{precision}" if precision > -1 else ""
        kind = "e" if scientific else "g" if shortest else "f"
    else:
        p, kind = "", "d"
    return apply(_as_string, x, fmt=f"%{flags}{w}{p}{kind}")


@op("StringJoin", shape=lambda *xs, separator: (_broadcast_shape(xs), _STR))
def _join(*xs, separator):
    arrays = np.broadcast_arrays(*xs)
    out = np.empty(arrays[0].shape, dtype=object)
    flat = out.reshape(-1)
    columns = [a.reshape(-1) for a in arrays]
    for i in range(flat.size):
        flat[i] = separator.join(_bytes(c[i]) for c in columns)
    return out


def _broadcast_shape(specs: tuple) -> Any:
    shapes = [s[0] for s in specs]
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes]):
        known = [d for d in dims if d != 1]
        out.append(None if None in known else (known[0] if known else 1))
    return tuple(out)


def join(inputs: list, separator: str = "", name: str | None = None) -> Tensor:
    """Elementwise concatenation of the tensors in `inputs` (broadcasting), with `separator`."""
    if any(isinstance(x, RaggedTensor) for x in inputs):
        template = next(x for x in inputs if isinstance(x, RaggedTensor))
        flat = [x.flat_values if isinstance(x, RaggedTensor) else x for x in inputs]
        return template.with_flat_values(join(flat, separator))
    return apply(_join, *[_t(x, _STR) for x in inputs], separator=_bytes(separator))


@op("ReduceJoin", shape=lambda x, *, axes, keepdims, separator: (None if x[0] is None else tuple(
    1 if i in axes else d for i, d in enumerate(x[0]) if keepdims or i not in axes), _STR))
def _reduce_join(x, *, axes, keepdims, separator):
    moved = np.moveaxis(x, axes, list(range(len(axes))))
    lead = int(np.prod(moved.shape[:len(axes)]))
    rest = moved.shape[len(axes):]
    flat = moved.reshape((lead, -1))
    out = np.empty(flat.shape[1], dtype=object)
    for j in range(flat.shape[1]):
        out[j] = separator.join(_bytes(s) for s in flat[:, j])
    out = out.reshape(rest)
    if keepdims:
        for a in sorted(axes):
            out = np.expand_dims(out, a)
    return out


def reduce_join(inputs: Any, axis: Any = None, keepdims: bool = False, separator: str = "",
                name: str | None = None) -> Tensor:
    """Join strings along `axis` (all axes when None), in order, with `separator`."""
    if isinstance(inputs, RaggedTensor):
        if axis not in (-1, 1) or inputs.ragged_rank != 1:
            raise NotImplementedError("tf.strings.reduce_join of a RaggedTensor: axis=-1 only")
        rows = apply(_ragged_reduce_join, inputs.flat_values, inputs.row_splits,
                     separator=_bytes(separator))
        return rows
    x = _t(inputs, _STR)
    rank = x.shape.rank
    axes = tuple(range(rank)) if axis is None else tuple(
        sorted(a % rank for a in ([axis] if isinstance(axis, int) else axis)))
    return apply(_reduce_join, x, axes=axes, keepdims=bool(keepdims),
                 separator=_bytes(separator))


@op("RaggedReduceJoin", shape=lambda values, splits, *, separator: ((None,), _STR))
def _ragged_reduce_join(values, splits, *, separator):
    out = np.empty(len(splits) - 1, dtype=object)
    for i in range(len(out)):
        out[i] = separator.join(_bytes(s) for s in values[splits[i]:splits[i + 1]])
    return out


# --- substrings -------------------------------------------------------------------------------


@op("Substr", shape=lambda x, pos, n, *, unit: (_broadcast_shape((x, pos, n)), _STR))
def _substr(x, pos, n, *, unit):
    xs, ps, ns = np.broadcast_arrays(x, pos, n)
    out = np.empty(xs.shape, dtype=object)
    flat = out.reshape(-1)
    for i, (s, p, k) in enumerate(zip(xs.reshape(-1), ps.reshape(-1), ns.reshape(-1))):
        s = _bytes(s)
        seq = s.decode() if unit == "UTF8_CHAR" else s
        size = len(seq)
        p = int(p)
        if p < 0:
            p += size
        if not 0 <= p <= size:
            raise ValueError(f"Substr: position {int(pos.reshape(-1)[i % pos.size])} is out "
                             f"of range for a string of length {size}")
        piece = seq[p:p + max(int(k), 0)]
        flat[i] = piece.encode() if unit == "UTF8_CHAR" else piece
    return out


@_ragged_aware
def substr(input: Any, pos: Any, len: Any, unit: str = "BYTE",  # noqa: A002
           name: str | None = None) -> Tensor:
    """Substrings from `pos`, `len` long (bytes, or UTF-8 characters)."""
    return apply(_substr, _t(input, _STR), _t(pos, _dtypes.int32), _t(len, _dtypes.int32),
                 unit=unit)


# --- splitting (ragged results) -----------------------------------------------------------------


@op("StringSplitV2", multi_output=True,
    shape=lambda x, *, sep, maxsplit: [((None,), _STR), ((None,), _I64)])
def _split(x, *, sep, maxsplit):
    values, splits = [], [0]
    for s in x.reshape(-1):
        s = _bytes(s)
        parts = s.split(sep, maxsplit) if sep is not None else s.split(None, maxsplit)
        values.extend(parts)
        splits.append(len(values))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out, np.asarray(splits, np.int64)


def _ragged_result(x: Tensor, values: Tensor, splits: Tensor) -> Any:
    """Split results of a (possibly multi-dim) input as a RaggedTensor over its shape."""
    rank = x.shape.rank
    rt = RaggedTensor.from_row_splits(values, splits, validate=False)
    if rank == 0:
        return rt.values
    from tapeflow.ops import array_ops

    shape = array_ops.shape(x, out_type=_I64)
    for d in range(rank - 1, 0, -1):
        rt = RaggedTensor.from_uniform_row_length(rt, shape[d])
    return rt


def split(input: Any, sep: Any = None, maxsplit: int = -1,  # noqa: A002
          name: str | None = None) -> Any:
    """Split each string on `sep` (whitespace runs when None): a RaggedTensor of pieces."""
    if isinstance(input, RaggedTensor):
        inner = split(input.flat_values, sep, maxsplit)
        return input.with_flat_values(inner)
    x = _t(input, _STR)
    values, splits = apply(_split, x, sep=None if sep is None else _bytes(_scalar_str(sep)),
                           maxsplit=maxsplit)
    return _ragged_result(x, values, splits)


@op("BytesSplit", multi_output=True, shape=lambda x: [((None,), _STR), ((None,), _I64)])
def _bytes_split(x):
    values, splits = [], [0]
    for s in x.reshape(-1):
        values.extend(bytes([b]) for b in _bytes(s))
        splits.append(len(values))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out, np.asarray(splits, np.int64)


def bytes_split(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """Each string as a ragged row of single bytes."""
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(bytes_split(input.flat_values))
    x = _t(input, _STR)
    return _ragged_result(x, *apply(_bytes_split, x))


def _decode(s: bytes, encoding: str, errors: str, replacement: int) -> str:
    if errors == "strict":
        return s.decode(encoding)
    if errors == "ignore":
        return s.decode(encoding, "ignore")
    text = s.decode(encoding, "replace")
    return text.replace("\ufffd", chr(replacement)) if replacement != 0xFFFD else text


@op("UnicodeDecodeWithOffsets", multi_output=True,
    shape=lambda x, *, encoding, errors, replacement: [((None,), _dtypes.int32),
                                                       ((None,), _I64), ((None,), _I64)])
def _unicode_decode(x, *, encoding, errors, replacement):
    chars, offsets, splits = [], [], [0]
    for s in x.reshape(-1):
        text = _decode(_bytes(s), encoding, errors, replacement)
        pos = 0
        for ch in text:
            chars.append(ord(ch))
            offsets.append(pos)
            pos += len(ch.encode(encoding, "replace"))
        splits.append(len(chars))
    return (np.asarray(chars, np.int32), np.asarray(offsets, np.int64),
            np.asarray(splits, np.int64))


def _decode_parts(input: Any, input_encoding: str, errors: str,  # noqa: A002
                  replacement_char: int) -> tuple:
    x = _t(input, _STR)
    codes, offsets, splits = apply(_unicode_decode, x, encoding=input_encoding.lower(),
                                   errors=errors, replacement=replacement_char)
    return x, codes, offsets, splits


def unicode_decode(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, replace_control_characters: bool = False,
                   name: str | None = None) -> Any:
    """Each string as a ragged row of int32 code points."""
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(unicode_decode(input.flat_values, input_encoding, errors,
                                                     replacement_char))
    x, codes, _, splits = _decode_parts(input, input_encoding, errors, replacement_char)
    return _ragged_result(x, codes, splits)


def unicode_decode_with_offsets(input: Any, input_encoding: str,  # noqa: A002
                                errors: str = "replace", replacement_char: int = 65533,
                                replace_control_characters: bool = False,
                                name: str | None = None) -> tuple:
    """(code points, byte offset of each) as ragged rows."""
    x, codes, offsets, splits = _decode_parts(input, input_encoding, errors, replacement_char)
    return _ragged_result(x, codes, splits), _ragged_result(x, offsets, splits)


@op("UnicodeSplitChars", multi_output=True,
    shape=lambda x, *, encoding, errors, replacement: [((None,), _STR), ((None,), _I64)])
def _unicode_split(x, *, encoding, errors, replacement):
    values, splits = [], [0]
    for s in x.reshape(-1):
        text = _decode(_bytes(s), encoding, errors, replacement)
        values.extend(ch.encode(encoding) for ch in text)
        splits.append(len(values))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out, np.asarray(splits, np.int64)


def unicode_split(input: Any, input_encoding: str, errors: str = "replace",  # noqa: A002
                  replacement_char: int = 65533, name: str | None = None) -> Any:
    """Each string as a ragged row of its characters (as strings)."""
    if isinstance(input, RaggedTensor):
        return input.with_flat_values(unicode_split(input.flat_values, input_encoding, errors,
                                                    replacement_char))
    x = _t(input, _STR)
    values, splits = apply(_unicode_split, x, encoding=input_encoding.lower(), errors=errors,
                           replacement=replacement_char)
    return _ragged_result(x, values, splits)


@op("UnicodeEncode", shape=lambda codes, splits, *, encoding: ((None,), _STR))
def _unicode_encode(codes, splits, *, encoding):
    out = np.empty(len(splits) - 1, dtype=object)
    for i in range(len(out)):
        out[i] = "".join(chr(c) for c in codes[splits[i]:splits[i + 1]]).encode(encoding)
    return out


def unicode_encode(input: Any, output_encoding: str, errors: str = "replace",  # noqa: A002
                   replacement_char: int = 65533, name: str | None = None) -> Tensor:
    """Rows of code points (ragged or dense; the last dim) back to strings."""
    from tapeflow.ops import array_ops

    encoding = output_encoding.lower()
    if isinstance(input, RaggedTensor):
        if isinstance(input.values, RaggedTensor):
            return input.with_values(unicode_encode(input.values, output_encoding))
        return apply(_unicode_encode, input.values, input.row_splits, encoding=encoding)
    x = _t(input, _dtypes.int32)
    if x.shape.rank == 1:
        n = array_ops.shape(x, out_type=_I64)
        splits = array_ops.concat([array_ops.zeros([1], _I64), n], 0)
        return array_ops.reshape(apply(_unicode_encode, x, splits, encoding=encoding), [])
    rt = RaggedTensor.from_tensor(x)
    out = apply(_unicode_encode, rt.values, rt.row_splits, encoding=encoding)
    return out if x.shape.rank == 2 else array_ops.reshape(out, array_ops.shape(x)[:-1])


# --- formatting and hashing --------------------------------------------------------------------


@op("StringFormat", shape=lambda *xs, template, placeholder, summarize: ((), _STR))
def _format(*xs, template, placeholder, summarize):
    from tapeflow.ops.control_flow_ops import _format as format_tensor

    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(xs):
        raise ValueError(f"tf.strings.format: template has {len(pieces) - 1} placeholders for "
                         f"{len(xs)} inputs")
    out = pieces[0]
    for x, rest in zip(xs, pieces[1:]):
        out += _format_one(x, summarize, format_tensor) + rest
    return np.asarray(out.encode(), dtype=object)


def _format_one(x: np.ndarray, summarize: int, format_tensor: Callable) -> str:
    """tf.print's layout, with strings in double quotes as tf.strings.format shows them."""
    if x.dtype != object:
        return format_tensor(x, summarize)
    if x.ndim == 0:
        return f'"{_bytes(x[()]).decode()}"'
    if x.ndim == 1:
        return "[" + " ".join(f'"{_bytes(s).decode()}"' for s in x) + "]"
    return format_tensor(x, summarize)


def format(template: str, inputs: Any, placeholder: str = "{}",  # noqa: A001
           summarize: int = 3, name: str | None = None) -> Tensor:
    """Fill each `placeholder` in `template` with a tensor printed as tf.print does."""
    xs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    return apply(_format, *[_t(x) for x in xs], template=template, placeholder=placeholder,
                 summarize=summarize)


def _bucket(fn: Callable, num_buckets: int) -> Callable:
    return lambda s: fn(s) % num_buckets


@_ragged_aware
def to_hash_bucket_fast(input: Any, num_buckets: int,  # noqa: A002
                        name: str | None = None) -> Tensor:
    """Fingerprint64(s) % num_buckets: TensorFlow's buckets for the same strings."""
    return _unary(input, _bucket(hashing.fingerprint64, int(num_buckets)), _I64)


@_ragged_aware
def to_hash_bucket(string_tensor: Any, num_buckets: int, name: str | None = None) -> Tensor:
    """TensorFlow's legacy Hash64(s) % num_buckets."""
    return _unary(string_tensor, _bucket(hashing.hash64, int(num_buckets)), _I64)


@_ragged_aware
def to_hash_bucket_strong(input: Any, num_buckets: int, key: Any,  # noqa: A002
                          name: str | None = None) -> Tensor:
    """SipHash-2-4 under `key` (two ints) % num_buckets, as TensorFlow."""
    k0, k1 = (int(k) & ((1 << 64) - 1) for k in key)
    return _unary(input, lambda s: hashing.siphash24(k0, k1, s) % int(num_buckets), _I64)
