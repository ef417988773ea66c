"""Compiled TFRecord framing: find and CRC-check every whole record in a chunk of a file.

Reading record by record costs two reads, two unpacks and two checksum calls in Python per
record; here one kernel call per chunk (about a megabyte) finds the record boundaries and checks
both masked CRC-32Cs, leaving Python one slice per record.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit

OK, BAD_LENGTH_CRC, BAD_DATA_CRC = 0, 1, 2


def _crc_table() -> np.ndarray:
    """Slicing-by-8 tables of the CRC-32C polynomial: row 0 is the byte-at-a-time table, row k
    advances a byte's contribution by k more bytes, so one step folds in 8 bytes."""
    table = np.zeros((8, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table[0, i] = c
    for k in range(1, 8):
        for i in range(256):
            prev = int(table[k - 1, i])
            table[k, i] = (prev >> 8) ^ int(table[0, prev & 0xFF])
    return table


_TABLE = _crc_table()


@jit()
def _masked_crc(buf, start, end, table):
    crc = np.uint32(0xFFFFFFFF)
    i, byte = start, np.uint32(0xFF)
    while i + 8 <= end:
        one = _u32(buf, i) ^ crc
        two = _u32(buf, i + 4)
        crc = (table[7, one & byte] ^ table[6, (one >> np.uint32(8)) & byte]
               ^ table[5, (one >> np.uint32(16)) & byte] ^ table[4, one >> np.uint32(24)]
               ^ table[3, two & byte] ^ table[2, (two >> np.uint32(8)) & byte]
               ^ table[1, (two >> np.uint32(16)) & byte] ^ table[0, two >> np.uint32(24)])
        i += 8
    for j in range(i, end):
        crc = table[0, (crc ^ buf[j]) & byte] ^ (crc >> np.uint32(8))
    crc = crc ^ np.uint32(0xFFFFFFFF)
    rotated = (crc >> np.uint32(15)) | (crc << np.uint32(17))
    return np.uint32((np.uint64(rotated) + np.uint64(0xA282EAD8)) & np.uint64(0xFFFFFFFF))


@jit()
def _u32(buf, p):
    return (np.uint32(buf[p]) | (np.uint32(buf[p + 1]) << np.uint32(8))
            | (np.uint32(buf[p + 2]) << np.uint32(16)) | (np.uint32(buf[p + 3]) << np.uint32(24)))


@jit()
def frame(buf, table, starts, ends):
    """Fill starts/ends of the payloads of the whole records at the front of `buf`.

    Returns (records found, bytes consumed, status, offset of the bad record within buf); stops
    at the first incomplete record (the caller reads more) or at `len(starts)` records."""
    pos, n, size = 0, 0, buf.shape[0]
    while n < starts.shape[0] and pos + 12 <= size:
        length = np.uint64(_u32(buf, pos)) | (np.uint64(_u32(buf, pos + 4)) << np.uint64(32))
        if _masked_crc(buf, pos, pos + 8, table) != _u32(buf, pos + 8):
            return n, pos, BAD_LENGTH_CRC, pos
        if np.uint64(pos + 16) + length > np.uint64(size):
            break
        stop = pos + 12 + np.int64(length)
        if _masked_crc(buf, pos + 12, stop, table) != _u32(buf, stop):
            return n, pos, BAD_DATA_CRC, pos
        starts[n] = pos + 12
        ends[n] = stop
        n += 1
        pos = stop + 4
    return n, pos, OK, pos


def table() -> np.ndarray:
    return _TABLE


AVAILABLE = frame is not None
