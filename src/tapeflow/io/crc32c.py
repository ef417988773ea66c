"""CRC-32C (Castagnoli), as TFRecord uses it, and TF's "masked" form of it.

Uses the `google-crc32c` C extension when installed (hundreds of MB/s); otherwise a
table-driven pure-Python fallback (slow, but always there).
"""

from __future__ import annotations

_POLY = 0x82F63B78


def _table() -> list:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def _crc32c_python(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:
    import google_crc32c as _fast

    def crc32c(data: bytes) -> int:
        """CRC-32C of `data`."""
        return _fast.value(bytes(data))
except ImportError:
    crc32c = _crc32c_python


def masked_crc32c(data: bytes) -> int:
    """TF's masked CRC: rotate right by 15 bits and add a constant (guards CRCs of CRCs)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
