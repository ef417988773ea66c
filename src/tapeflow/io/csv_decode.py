"""`tf.io.decode_csv`: string records -> one tensor per column, as TensorFlow parses them.

RFC 4180 fields: a field that starts with a double quote runs to the closing quote (`""` is a
quote inside it) and must end there; an unquoted field may not hold a quote. An empty field or
one equal to `na_value` takes its column's default, and a column with an empty default is
required. Numbers follow TensorFlow's parsers: surrounding whitespace is allowed; floats take
`inf`/`nan`/`Infinity` and hexadecimal; integers are decimal digits with an optional sign.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor

_ALLOWED = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64, _dtypes.string)
_INT = re.compile(rb"\s*[+-]?[0-9]+\s*")
_FLOAT = re.compile(rb"\s*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)\s*",
                    re.IGNORECASE)
_HEX = re.compile(rb"\s*[+-]?0x([0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(p[+-]?[0-9]+)?\s*",
                  re.IGNORECASE)
_LIMITS = {_dtypes.int32: (-2**31, 2**31 - 1), _dtypes.int64: (-2**63, 2**63 - 1)}


def _fields(record: bytes, delim: bytes, quotes: bool, index: int) -> list:
    """The fields of one record as (bytes, quoted) pairs."""
    if not record:
        return []
    if not quotes or b'"' not in record:
        return [(f, False) for f in record.split(delim)]
    out, i, n = [], 0, len(record)
    while True:
        if i < n and record[i:i + 1] == b'"':
            j, parts = i + 1, []
            while True:
                k = record.find(b'"', j)
                if k < 0:
                    raise errors.InvalidArgumentError(
                        f"decode_csv: quoted field in record {index} is not closed")
                parts.append(record[j:k])
                if record[k + 1:k + 2] == b'"':
                    parts.append(b'"')
                    j = k + 2
                    continue
                break
            i = k + 1
            if i < n and record[i:i + 1] != delim:
                raise errors.InvalidArgumentError(
                    f"decode_csv: quote inside a string has to be escaped by another quote "
                    f"(record {index})")
            out.append((b"".join(parts), True))
        else:
            k = record.find(delim, i)
            field = record[i:] if k < 0 else record[i:k]
            if b'"' in field or b"\n" in field or b"\r" in field:
                raise errors.InvalidArgumentError(
                    f"decode_csv: unquoted fields cannot have quotes/CRLFs inside (record "
                    f"{index}: {field[:20]!r})")
            out.append((field, False))
            i = i + len(field)
        if i >= n:
            return out
        i += 1  # the delimiter
        if i == n:
            out.append((b"", False))
            return out


def _number(text: bytes, dtype: _dtypes.DType, col: int, row: int) -> Any:
    if dtype.is_integer:
        lo, hi = _LIMITS[dtype]
        if _INT.fullmatch(text) and lo <= int(text) <= hi:
            return int(text)
        raise errors.InvalidArgumentError(
            f"decode_csv: field {col} in record {row} is not a valid {dtype.name}: "
            f"{text.decode(errors='replace')}")
    if _FLOAT.fullmatch(text):
        return float(text)
    if _HEX.fullmatch(text):
        return float.fromhex(text.decode())
    raise errors.InvalidArgumentError(
        f"decode_csv: field {col} in record {row} is not a valid float: "
        f"{text.decode(errors='replace')}")


def _decode_csv_shape(records, *defaults, **attrs):
    return [(records[0], d[1]) for d in defaults]


@op("DecodeCSV", multi_output=True, shape=_decode_csv_shape)
def _decode_csv(records, *defaults, field_delim, use_quote_delim, na_value, select_cols):
    dtypes = [_dtypes.string if d.dtype == object else _dtypes.as_dtype(d.dtype)
              for d in defaults]
    for i, d in enumerate(defaults):
        if d.size > 1:
            raise errors.InvalidArgumentError(
                f"decode_csv: there should only be 1 default per field but field {i} has "
                f"{d.size}")
    wanted = list(select_cols) if select_cols else list(range(len(defaults)))
    position = {c: k for k, c in enumerate(wanted)}
    columns = [[] for _ in defaults]
    for row, record in enumerate(records.ravel().tolist()):
        fields = _fields(record, field_delim, use_quote_delim, row)
        if (len(fields) != len(defaults) if not select_cols else len(fields) <= wanted[-1]):
            raise errors.InvalidArgumentError(
                f"decode_csv: expect {len(defaults)} fields but have "
                f"{len(fields) if not select_cols else 0} in record {row}")
        for c, (text, quoted) in enumerate(fields):
            k = position.get(c)
            if k is None:
                continue
            if text == b"" or text == na_value:
                if defaults[k].size == 0:
                    raise errors.InvalidArgumentError(
                        f"decode_csv: field {k} is required but missing in record {row}")
                columns[k].append(defaults[k].reshape(-1)[0])
            elif dtypes[k] is _dtypes.string:
                columns[k].append(text)
            else:
                columns[k].append(_number(text.strip() if quoted else text, dtypes[k], k, row))
    outs = []
    for values, dtype in zip(columns, dtypes):
        arr = np.empty(len(values), dtype=object) if dtype is _dtypes.string else None
        if arr is not None:
            arr[:] = values
        else:
            arr = np.asarray(values, dtype=dtype._np)
        outs.append(arr.reshape(records.shape))
    return tuple(outs)


def _default(value: Any, i: int) -> Tensor:
    t = value if isinstance(value, Tensor) else convert_to_tensor(value)
    if t.dtype not in _ALLOWED:
        raise TypeError(f"decode_csv: record_defaults[{i}] has dtype {t.dtype.name}; allowed: "
                        f"{', '.join(d.name for d in _ALLOWED)}")
    return t


def decode_csv(records: Any, record_defaults: list, field_delim: str = ",",
               use_quote_delim: bool = True, name: str | None = None, na_value: str = "",
               select_cols: list | None = None) -> list:
    """One tensor per column (shaped like `records`), typed by `record_defaults`."""
    if select_cols is not None:
        if any(c < 0 for c in select_cols):
            raise ValueError("decode_csv: select_cols contains a negative index")
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError("decode_csv: select_cols is not strictly increasing")
        if len(select_cols) != len(record_defaults):
            raise ValueError("decode_csv: length of select_cols and record_defaults do not match")
    delim = field_delim.encode() if isinstance(field_delim, str) else bytes(field_delim)
    if len(delim) != 1:
        raise errors.InvalidArgumentError(
            f"decode_csv: field_delim should be only 1 char, got {field_delim!r}")
    defaults = [_default(d, i) for i, d in enumerate(record_defaults)]
    out = apply(_decode_csv, convert_to_tensor(records, _dtypes.string), *defaults,
                field_delim=delim, use_quote_delim=bool(use_quote_delim),
                na_value=na_value.encode() if isinstance(na_value, str) else bytes(na_value),
                select_cols=tuple(select_cols or ()))
    return list(out)
