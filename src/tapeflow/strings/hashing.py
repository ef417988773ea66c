"""The string hashes behind TensorFlow's hash buckets, bit for bit.

- ``to_hash_bucket_fast``: FarmHash Fingerprint64 (from the pyfarmhash package, which matches
  TensorFlow's ``Fingerprint64``; checked against recorded TF 2.21 buckets in the tests).
- ``to_hash_bucket`` (legacy): TensorFlow's own ``Hash64``, a MurmurHash2-64A variant with the
  seed 0xDECAFCAFFE (tensorflow/core/lib/hash/hash.cc), written out below.
- ``to_hash_bucket_strong``: SipHash-2-4 keyed with the two 64-bit key halves.
"""

from __future__ import annotations

import struct

_MASK = (1 << 64) - 1
_M = 0xC6A4A7935BD1E995
_R = 47


def fingerprint64(data: bytes) -> int:
    import farmhash

    return farmhash.fingerprint64(data)


def hash64(data: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TensorFlow's Hash64 (MurmurHash64A over little-endian 8-byte words)."""
    n = len(data)
    h = (seed ^ (n * _M)) & _MASK
    full = n - n % 8
    for (k,) in struct.iter_unpack("<Q", data[:full]):
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h ^= k
        h = (h * _M) & _MASK
    tail = data[full:]
    if tail:
        for i in range(len(tail) - 1, -1, -1):
            h ^= tail[i] << (8 * i)
        h = (h * _M) & _MASK
    h ^= h >> _R
    h = (h * _M) & _MASK
    h ^= h >> _R
    return h


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """SipHash-2-4 of `data` under the 128-bit key (k0, k1)."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(v0: int, v1: int, v2: int, v3: int, n: int) -> tuple:
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)
        return v0, v1, v2, v3

    n = len(data)
    full = n - n % 8
    for (m,) in struct.iter_unpack("<Q", data[:full]):
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    last = ((n & 0xFF) << 56) | int.from_bytes(data[full:], "little")
    v3 ^= last
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3
