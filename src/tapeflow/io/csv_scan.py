"""A compiled CSV block parser: field boundaries, integers and most decimals in one call.

`parse` walks whole rows of a byte buffer (RFC 4180 quoting: a quoted field may hold the
delimiter, newlines and doubled quotes) and fills, per row and wanted column, the number it
holds and where its text lies. Decimals are converted here only when that is exact (Clinger's
fast path: at most 2**53 as an integer mantissa and a power of ten up to 1e22, one correctly
rounded multiply or divide); every other field is flagged for Python's own `float`/`int`, so
the results are those of the row-by-row parser.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit

SKIP, FLOAT, INT, STRING = 0, 1, 2, 3        # what a column holds
PARSED, MISSING, PYTHON = 0, 1, 2            # per-field flag: done here, empty/NA, ask Python
QUOTED = 3                                   # a quoted string field (may need "" unescaping)
OK, BAD_FIELD_COUNT, INCOMPLETE, BAD_QUOTE = 0, 1, 2, 3   # status of a block

_POW10 = np.array([10.0 ** k for k in range(23)])


@jit()
def _number(buf, s, e, kind, pow10):
    """(value as float, as int, flag) of buf[s:e]."""
    i, neg = s, False
    if i < e and (buf[i] == 45 or buf[i] == 43):   # - +
        neg = buf[i] == 45
        i += 1
    mant, digits, frac, seen = np.uint64(0), 0, 0, False
    while i < e and 48 <= buf[i] <= 57:
        if digits < 19:
            mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
            if mant != 0:
                digits += 1
        else:
            return 0.0, 0, PYTHON
        seen = True
        i += 1
    if kind == INT:
        if not seen or i != e or digits > 18:
            return 0.0, 0, PYTHON
        v = np.int64(mant)
        return 0.0, -v if neg else v, PARSED
    if i < e and buf[i] == 46:   # .
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            if digits < 19:
                mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
                if mant != 0:
                    digits += 1
                frac += 1
            else:
                return 0.0, 0, PYTHON
            seen = True
            i += 1
    if not seen:
        return 0.0, 0, PYTHON
    exp = 0
    if i < e and (buf[i] == 101 or buf[i] == 69):   # e E
        i += 1
        eneg = False
        if i < e and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        if i == e:
            return 0.0, 0, PYTHON
        while i < e and 48 <= buf[i] <= 57:
            exp = exp * 10 + (buf[i] - 48)
            if exp > 400:
                return 0.0, 0, PYTHON
            i += 1
        if eneg:
            exp = -exp
    if i != e or mant > np.uint64(2**53):
        return 0.0, 0, PYTHON
    p = exp - frac
    value = float(mant)
    if p > 22 or p < -22:
        return 0.0, 0, PYTHON
    value = value * pow10[p] if p >= 0 else value / pow10[-p]
    return -value if neg else value, 0, PARSED


@jit()
def parse(buf, eof, delim, quoting, kinds, exact_fields, min_fields, na, pow10,
          floats, ints, spans, flags):
    """Parse whole rows from the start of `buf` into the output arrays (one row each).

    Returns (rows, bytes consumed, status, bad row). Empty lines are skipped. A row that may
    continue past the end of `buf` is left for the next call unless `eof`."""
    n, pos, size = 0, 0, buf.shape[0]
    ncols = kinds.shape[0]
    while n < floats.shape[0] and pos < size:
        if buf[pos] == 10 or buf[pos] == 13:   # an empty line
            pos += 1
            continue
        field, p, done = 0, pos, False
        while not done:
            quoted = quoting and p < size and buf[p] == 34
            if quoted:
                s = p + 1
                q = s
                while True:
                    while q < size and buf[q] != 34:
                        q += 1
                    if q + 1 < size and buf[q + 1] == 34:
                        q += 2
                        continue
                    break
                if q >= size or (q + 1 >= size and not eof):
                    return n, pos, INCOMPLETE, n
                e = q
                p = q + 1
                if p < size and buf[p] != delim and buf[p] != 10 and buf[p] != 13:
                    return n, pos, BAD_QUOTE, n
            else:
                s = p
                while p < size and buf[p] != delim and buf[p] != 10 and buf[p] != 13:
                    p += 1
                e = p
            if p >= size and not eof:
                return n, pos, INCOMPLETE, n
            if field < ncols and kinds[field] != SKIP:
                kind = kinds[field]
                spans[n, field, 0] = s
                spans[n, field, 1] = e
                empty = e == s
                if not empty and na.shape[0] == e - s:
                    empty = True
                    for k in range(e - s):
                        if buf[s + k] != na[k]:
                            empty = False
                            break
                if empty:
                    flags[n, field] = MISSING
                elif kind == STRING:
                    flags[n, field] = QUOTED if quoted else PARSED
                elif quoted:
                    flags[n, field] = PYTHON
                else:
                    f, i, flag = _number(buf, s, e, kind, pow10)
                    floats[n, field] = f
                    ints[n, field] = i
                    flags[n, field] = flag
            field += 1
            if p < size and buf[p] == delim:
                p += 1
                continue
            if p < size and buf[p] == 13:
                p += 1
            if p < size and buf[p] == 10:
                p += 1
            done = True
        if (exact_fields >= 0 and field != exact_fields) or field < min_fields:
            return n, pos, BAD_FIELD_COUNT, n
        n += 1
        pos = p
    return n, pos, OK, n


def pow10() -> np.ndarray:
    return _POW10


AVAILABLE = parse is not None
