"""A compiled scanner of serialized `tf.train.Example`s: a batch of records in one call.

The records are joined into one byte buffer; numba kernels walk the protobuf wire format
(Example.features -> Features.feature map entries -> Feature oneof -> Bytes/Float/Int64List) and
report, for every record and requested key, which list kind it holds and where its payload lies.
Two more kernels count and copy the values, so no Python object is made per record except the
bytes of string features. The kernels release the GIL (parallel map workers run them at once).

Records the scanner does not take on exactly (a repeated `features` field, a Feature listing the
same kind twice: protobuf merges those) are flagged and parsed by protobuf instead, as are all
records when numba is missing.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit

ABSENT, BYTES, FLOAT, INT64, EMPTY = 0, 1, 2, 3, 4   # kind codes; EMPTY: a Feature with no list
OK, MALFORMED, FALLBACK = 0, 1, 2                    # per-record status


@jit()
def _varint(buf, pos, end):
    """(value as uint64, next position); next position -1 when the varint runs past `end`."""
    result = np.uint64(0)
    shift = np.uint64(0)
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= np.uint64(b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += np.uint64(7)
        if shift >= np.uint64(70):
            return result, -1
    return result, -1


@jit()
def _skip(buf, pos, end, wire):
    """Position after a field of wire type `wire` starting at `pos`; -1 if malformed."""
    if wire == 0:
        _, pos = _varint(buf, pos, end)
        return pos
    if wire == 1:
        return pos + 8 if pos + 8 <= end else -1
    if wire == 5:
        return pos + 4 if pos + 4 <= end else -1
    if wire == 2:
        n, pos = _varint(buf, pos, end)
        if pos < 0 or pos + np.int64(n) > end:
            return -1
        return pos + np.int64(n)
    return -1


@jit()
def _key_index(buf, start, end, keys, key_off):
    """Which requested key the bytes buf[start:end] are; -1 if none."""
    n = end - start
    for k in range(key_off.shape[0] - 1):
        ks, ke = key_off[k], key_off[k + 1]
        if ke - ks != n:
            continue
        same = True
        for i in range(n):
            if buf[start + i] != keys[ks + i]:
                same = False
                break
        if same:
            return k
    return -1


@jit()
def _feature(buf, pos, end, kind, span, r, k):
    """Parse one Feature message in buf[pos:end] into kind/span; returns a status."""
    found = EMPTY
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if pos < 0:
            return MALFORMED
        field, wire = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
        if 1 <= field <= 3 and wire == 2:
            n, pos = _varint(buf, pos, end)
            if pos < 0 or pos + np.int64(n) > end:
                return MALFORMED
            if found != EMPTY:
                return FALLBACK   # a second list in one Feature: protobuf would merge or replace
            found = field
            span[r, k, 0] = pos
            span[r, k, 1] = pos + np.int64(n)
            pos += np.int64(n)
        else:
            pos = _skip(buf, pos, end, wire)
            if pos < 0:
                return MALFORMED
    kind[r, k] = found
    return OK


@jit()
def _features(buf, pos, end, keys, key_off, kind, span, r):
    """Parse a Features message: map entries (key, Feature) for the requested keys."""
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if pos < 0:
            return MALFORMED
        field, wire = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
        if field != 1 or wire != 2:
            pos = _skip(buf, pos, end, wire)
            if pos < 0:
                return MALFORMED
            continue
        n, pos = _varint(buf, pos, end)
        entry_end = pos + np.int64(n)
        if pos < 0 or entry_end > end:
            return MALFORMED
        k, value_start, value_end = -1, -1, -1
        while pos < entry_end:
            tag, pos = _varint(buf, pos, entry_end)
            if pos < 0:
                return MALFORMED
            field, wire = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
            if wire == 2 and (field == 1 or field == 2):
                m, pos = _varint(buf, pos, entry_end)
                if pos < 0 or pos + np.int64(m) > entry_end:
                    return MALFORMED
                if field == 1:
                    k = _key_index(buf, pos, pos + np.int64(m), keys, key_off)
                else:
                    if value_start >= 0:
                        return FALLBACK   # two values in one entry: protobuf merges them
                    value_start, value_end = pos, pos + np.int64(m)
                pos += np.int64(m)
            else:
                pos = _skip(buf, pos, entry_end, wire)
                if pos < 0:
                    return MALFORMED
        if k >= 0:   # a later entry for the same key replaces an earlier one (map semantics)
            if value_start < 0:
                kind[r, k] = EMPTY
            else:
                status = _feature(buf, value_start, value_end, kind, span, r, k)
                if status != OK:
                    return status
    return OK


@jit()
def scan(buf, offsets, keys, key_off, kind, span, status):
    """Fill kind[r, k] and span[r, k] (payload of the list) for every record r and key k.
    Returns the statuses seen, as bits (1 << MALFORMED, 1 << FALLBACK; 0: all OK), so the
    caller looks at `status` only when something is wrong."""
    seen_status = 0
    for r in range(offsets.shape[0] - 1):
        pos, end = offsets[r], offsets[r + 1]
        seen = False
        status[r] = OK
        while pos < end:
            tag, pos = _varint(buf, pos, end)
            if pos < 0:
                status[r] = MALFORMED
                break
            field, wire = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
            if field == 1 and wire == 2:
                n, pos = _varint(buf, pos, end)
                if pos < 0 or pos + np.int64(n) > end:
                    status[r] = MALFORMED
                    break
                if seen:
                    status[r] = FALLBACK   # Example.features twice: protobuf merges the maps
                    break
                seen = True
                s = _features(buf, pos, pos + np.int64(n), keys, key_off, kind, span, r)
                if s != OK:
                    status[r] = s
                    break
                pos += np.int64(n)
            else:
                pos = _skip(buf, pos, end, wire)
                if pos < 0:
                    status[r] = MALFORMED
                    break
        if status[r] != OK:
            seen_status |= 1 << status[r]
    return seen_status


@jit()
def count(buf, kind, span, k, counts, first):
    """Number of values of key k in every record (-1 where the list is malformed) and the
    index of each record's first value (`first`); returns the total, or -1 - r for the first
    malformed record r."""
    total = 0
    for r in range(kind.shape[0]):
        c = 0
        kd = kind[r, k]
        if kd == BYTES or kd == FLOAT or kd == INT64:
            pos, end = span[r, k, 0], span[r, k, 1]
            while pos < end:
                tag, pos = _varint(buf, pos, end)
                if pos < 0:
                    c = -1
                    break
                field, wire = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
                if field != 1:
                    pos = _skip(buf, pos, end, wire)
                elif kd == FLOAT and wire == 5:
                    c += 1
                    pos = pos + 4 if pos + 4 <= end else -1
                elif kd == INT64 and wire == 0:
                    c += 1
                    _, pos = _varint(buf, pos, end)
                elif wire == 2:
                    n, pos = _varint(buf, pos, end)
                    stop = pos + np.int64(n)
                    if pos < 0 or stop > end:
                        c = -1
                        break
                    if kd == BYTES:
                        c += 1
                    elif kd == FLOAT:
                        if n % 4:
                            c = -1
                            break
                        c += np.int64(n) // 4
                    else:
                        while pos < stop:
                            if buf[pos] < 0x80:
                                c += 1
                            pos += 1
                        if buf[stop - 1] >= 0x80:
                            c = -1
                            break
                    pos = stop
                else:
                    pos = -1
                if pos < 0:
                    c = -1
                    break
        counts[r] = c
        first[r] = total
        if c < 0:
            return -1 - r
        total += c
    return total


@jit()
def fill_numbers(buf, kind, span, k, first, out_bytes, out_int):
    """Copy the values of key k: float bytes into out_bytes (4 per value), int64s into out_int;
    record r's values start at value index first[r]."""
    for r in range(kind.shape[0]):
        kd = kind[r, k]
        if kd != FLOAT and kd != INT64:
            continue
        i = first[r]
        pos, end = span[r, k, 0], span[r, k, 1]
        while pos < end:
            tag, pos = _varint(buf, pos, end)
            field, wire = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
            if field != 1:
                pos = _skip(buf, pos, end, wire)
                continue
            stop = pos + 4
            if wire == 2:
                n, pos = _varint(buf, pos, end)
                stop = pos + np.int64(n)
            elif wire == 0:
                stop = pos + 1
            while pos < stop:
                if kd == FLOAT:
                    for b in range(4):
                        out_bytes[4 * i + b] = buf[pos + b]
                    pos += 4
                else:
                    v, pos = _varint(buf, pos, end)
                    out_int[i] = np.int64(v)
                i += 1
                if wire == 0:
                    break


@jit()
def string_spans(buf, kind, span, k, first, out):
    """Start and end (out[i, 0:2]) of every string value of key k, at value index first[r]."""
    for r in range(kind.shape[0]):
        if kind[r, k] != BYTES:
            continue
        i = first[r]
        pos, end = span[r, k, 0], span[r, k, 1]
        while pos < end:
            tag, pos = _varint(buf, pos, end)
            field, wire = np.int64(tag >> np.uint64(3)), np.int64(tag & np.uint64(7))
            if field != 1:
                pos = _skip(buf, pos, end, wire)
                continue
            n, pos = _varint(buf, pos, end)
            out[i, 0] = pos
            out[i, 1] = pos + np.int64(n)
            pos += np.int64(n)
            i += 1


AVAILABLE = scan is not None
