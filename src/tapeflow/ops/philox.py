"""Philox-4x32-10, TensorFlow's counter-based generator, and its bits-to-numbers transforms.

The same (key, counter) gives the same numbers as TensorFlow 2.21 on CPU (``alg="philox"``,
which ``"auto_select"`` means there):

- one Philox call maps a 128-bit counter and a 64-bit key to four uint32 words (ten rounds of
  two 32x32->64 multiplies, the key bumped by the Weyl constants between rounds); outputs are
  drawn from consecutive counters;
- stateless seeds ``[s0, s1]`` become (key, counter) by one scrambling Philox call over the
  seed with a fixed key (TF's ``GenerateKey``); ``tf.random.Generator`` keeps
  [counter_lo, counter_hi, key] as its int64 state and advances the counter by 256 per output;
- float32 uniform: 23 random mantissa bits under exponent 0 give [1, 2), minus 1; float64:
  52 bits from two words; normal: Box-Muller on pairs of uniforms (sin first, then cos), with
  uniforms below 1e-7 raised to it; truncated normal: Box-Muller pairs, keeping |x| < 2, each
  group of four outputs drawing from its own block of 256 counters; integers: bits modulo the
  range (two words for 64-bit types).

Kernels run vectorized in NumPy (uint64 arithmetic for the 32x32 products).
"""

from __future__ import annotations

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
MASK64 = (1 << 64) - 1


def philox(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox-4x32-10 of each row of `counters` ([n, 4] uint32) under `key`: [n, 4] uint32."""
    c = counters.astype(np.uint64)
    c0, c1, c2, c3 = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    k0, k1 = int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF
    for r in range(10):
        if r:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0 = _M0 * c0
        p1 = _M1 * c2
        hi0, lo0 = p0 >> _SHIFT, p0 & _LOW
        hi1, lo1 = p1 >> _SHIFT, p1 & _LOW
        c0 = hi1 ^ c1 ^ np.uint64(k0)
        c1 = lo1
        c2 = hi0 ^ c3 ^ np.uint64(k1)
        c3 = lo0
    return np.stack([c0, c1, c2, c3], axis=1).astype(np.uint32)


def counter_words(counter: tuple[int, int], start: int, n: int) -> np.ndarray:
    """[n, 4] uint32 counters start, start+1, ... after the 128-bit `counter` (lo, hi)."""
    lo0 = (int(counter[0]) + start) & MASK64
    carry = (int(counter[0]) + start) >> 64
    offsets = np.arange(n, dtype=np.uint64)
    lo = np.uint64(lo0) + offsets
    wrapped = (lo < np.uint64(lo0)).astype(np.uint64)  # carry out of the low 64 bits
    hi = np.uint64((int(counter[1]) + carry) & MASK64) + wrapped
    return np.stack([lo & _LOW, lo >> _SHIFT, hi & _LOW, hi >> _SHIFT], axis=1).astype(np.uint32)


def bits(key: tuple[int, int], counter: tuple[int, int], n_words: int,
         start: int = 0) -> np.ndarray:
    """The first `n_words` uint32 words of the stream at `counter` (+ `start` blocks)."""
    blocks = -(-n_words // 4)
    return philox(counter_words(counter, start, blocks), key).reshape(-1)[:n_words]


def key_counter_from_seed(seed: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """TensorFlow's GenerateKey: a stateless seed pair -> (key words, 128-bit counter)."""
    s0, s1 = (int(s) & MASK64 for s in seed)
    words = np.array([[s0 & 0xFFFFFFFF, s0 >> 32, s1 & 0xFFFFFFFF, s1 >> 32]], np.uint32)
    mix = philox(words, (0x3EC8F720, 0x02461E29))[0].astype(np.uint64)
    key = (int(mix[0]), int(mix[1]))
    counter = (0, int(mix[2]) | (int(mix[3]) << 32))
    return key, counter


# --- transforms ---------------------------------------------------------------------------


def uniform_float(words: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """[0, 1) floats: one word each (float16/32), two words each (float64)."""
    if dtype == np.float64:
        w = words.reshape(-1, 2).astype(np.uint64)
        man = ((w[:, 0] & np.uint64(0xFFFFF)) << _SHIFT) | w[:, 1]
        return (man | (np.uint64(1023) << np.uint64(52))).view(np.float64) - 1.0
    if dtype == np.float16:
        man = (words & np.uint32(0x3FF)).astype(np.uint16) | np.uint16(15 << 10)
        return man.view(np.float16) - np.float16(1.0)
    man = (words & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)
    return man.view(np.float32) - np.float32(1.0)


def words_per_value(dtype: np.dtype) -> int:
    return 2 if np.dtype(dtype).itemsize == 8 else 1


def box_muller(words: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Normal samples from pairs of uniforms: (sin, cos) * sqrt(-2 log u1)."""
    wide = dtype == np.float64
    u = uniform_float(words, np.float64 if wide else np.float32).reshape(-1, 2)
    ftype = np.float64 if wide else np.float32
    eps = ftype(1.0e-7)
    u1 = np.maximum(u[:, 0], eps)
    v1 = (2.0 * np.pi * u[:, 1].astype(np.float64)).astype(ftype)  # 2 * M_PI is a double
    # float32: each elementary function evaluated in float64 and rounded once, as glibc's
    # correctly rounded logf/sinf/cosf do (NumPy's own float32 versions can be 1 ulp off)
    r = np.sqrt(ftype(-2.0) * _rounded(np.log, u1))
    out = np.stack([_rounded(np.sin, v1) * r, _rounded(np.cos, v1) * r], axis=1).reshape(-1)
    return out.astype(dtype)


def _rounded(fn, x: np.ndarray) -> np.ndarray:
    return fn(x.astype(np.float64)).astype(x.dtype) if x.dtype == np.float32 else fn(x)


def uniform_int(words: np.ndarray, lo: int, hi: int, dtype: np.dtype) -> np.ndarray:
    """lo + bits % (hi - lo), with 64-bit types drawing two words per value."""
    span = hi - lo
    if np.dtype(dtype).itemsize == 8:
        w = words.reshape(-1, 2).astype(np.uint64)
        b = w[:, 0] | (w[:, 1] << _SHIFT)
    else:
        b = words.astype(np.uint64)
    return (np.int64(lo) + (b % np.uint64(span)).astype(np.int64)).astype(dtype)


def sample(kind: str, key: tuple, counter: tuple, n: int, dtype: np.dtype) -> np.ndarray:
    """`n` values of `kind` ('uniform', 'normal', 'truncated_normal') from (key, counter)."""
    dtype = np.dtype(dtype)
    per = words_per_value(dtype)
    if kind == "uniform":
        # each Philox block yields 4 words: 4 float32 or 2 float64 values
        return uniform_float(bits(key, counter, n * per), dtype).astype(dtype)
    if kind == "normal":
        group = 4 // per  # values per Philox block
        n_words = -(-n // group) * 4
        return box_muller(bits(key, counter, n_words), dtype)[:n]
    if kind == "truncated_normal":
        return _truncated(key, counter, n, dtype)
    raise ValueError(kind)


def _truncated(key: tuple, counter: tuple, n: int, dtype: np.dtype) -> np.ndarray:
    per = words_per_value(dtype)
    group = 4 // per
    out = np.empty(-(-n // group) * group, dtype)
    for g in range(len(out) // group):
        start, got, block = g * group * 256 // 4, 0, 0
        while got < group:
            words = bits(key, counter, 4, start=start + block)
            block += 1
            pairs = box_muller(words, dtype)
            for v in pairs:
                if abs(v) < 2.0:
                    out[g * group + got] = v
                    got += 1
                    if got == group:
                        break
    return out[:n]
