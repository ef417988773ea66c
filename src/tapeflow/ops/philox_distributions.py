"""TensorFlow's gamma and Poisson samplers on Philox streams (the numbers of TF 2.21's
RandomGamma / RandomPoissonV2 / StatelessRandomGammaV3 / StatelessRandomPoisson kernels).

Both kernels give every output its own block of 256 Philox counters (output i = alpha or rate
index * samples per alpha + sample index, starting at counter + 256 i) and draw from it in
double precision, one Philox call at a time: a uniform call yields two doubles (52 bits from
two words each), a normal call two Box-Muller values (sin, cos), and each is consumed from the
last value to the first. Outputs are stored sample-major ([samples..., alphas...]).

- gamma (Marsaglia and Tsang): alpha == 1 is -log1p(-u); otherwise d = alpha - 1/3 (alpha + 2/3
  below 1), c = 1 / (3 sqrt(d)); draw a normal x until v = (1 + c x)^3 > 0 and a uniform u is
  accepted by the squeeze u < 1 - 0.0331 x^4 or by log(u) < x^2 / 2 + d (1 - v + log v); the
  sample is d v, times b ** (1 / alpha) for one more uniform b when alpha < 1.
- Poisson: rate < 10 multiplies uniforms until the product falls to exp(-rate) (Knuth);
  otherwise Hormann's transformed rejection with a = -0.059 + 0.02483 b, b = 0.931 + 2.53
  sqrt(rate).

All outputs run the rejection loops in lockstep, vectorized: each keeps its own block counter
and its two-value uniform and normal buffers, and only the outputs still looking draw again.
Transcendental functions go through the C library (Python's math module element by element)
so the doubles are the kernels' own, not NumPy's vectorized approximations.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapeflow.ops import philox

_PER_OUTPUT = 256


def _libm(fn) -> Any:
    """A C-library function over float64 arrays (NumPy's SIMD versions may differ by an ulp)."""
    vectorized = np.frompyfunc(fn, 1, 1)
    return lambda x: np.asarray(vectorized(np.asarray(x, np.float64)), np.float64)


_log, _log1p, _sin, _cos, _exp, _lgamma = (_libm(f) for f in (
    math.log, math.log1p, math.sin, math.cos, math.exp, math.lgamma))
_pow = np.frompyfunc(math.pow, 2, 1)


def _counters(counter: tuple, offsets: np.ndarray) -> np.ndarray:
    """[n, 4] uint32 128-bit counters `counter` + each offset (carrying into the high half)."""
    lo0 = np.uint64(int(counter[0]) & philox.MASK64)
    lo = lo0 + offsets
    carry = (lo < lo0).astype(np.uint64)
    hi = np.uint64(int(counter[1]) & philox.MASK64) + carry
    low, shift = np.uint64(0xFFFFFFFF), np.uint64(32)
    return np.stack([lo & low, lo >> shift, hi & low, hi >> shift], axis=1).astype(np.uint32)


class _Streams:
    """Every output's Philox stream (block 256 i + j for its j-th call) and the values left
    over from its last uniform and normal calls (TF's UNIFORM / NORMAL: two per call, handed
    out last first)."""

    def __init__(self, key: tuple, counter: tuple, n: int):
        self.key, self.counter = key, counter
        self.next = np.zeros(n, np.uint64)
        self.uniforms, self.u_left = np.zeros((n, 2)), np.zeros(n, np.int64)
        self.normals, self.n_left = np.zeros((n, 2)), np.zeros(n, np.int64)

    def _words(self, idx: np.ndarray) -> np.ndarray:
        offsets = idx.astype(np.uint64) * np.uint64(_PER_OUTPUT) + self.next[idx]
        self.next[idx] += np.uint64(1)
        return philox.philox(_counters(self.counter, offsets), self.key)

    def uniform(self, idx: np.ndarray) -> np.ndarray:
        need = idx[self.u_left[idx] == 0]
        if need.size:
            words = self._words(need).reshape(-1)
            self.uniforms[need] = philox.uniform_float(words, np.float64).reshape(-1, 2)
            self.u_left[need] = 2
        self.u_left[idx] -= 1
        return self.uniforms[idx, self.u_left[idx]]

    def normal(self, idx: np.ndarray) -> np.ndarray:
        need = idx[self.n_left[idx] == 0]
        if need.size:
            u = philox.uniform_float(self._words(need).reshape(-1), np.float64).reshape(-1, 2)
            u1 = np.maximum(u[:, 0], 1.0e-7)
            v1 = 2.0 * math.pi * u[:, 1]
            r = np.sqrt(-2.0 * _log(u1))
            self.normals[need] = np.stack([_sin(v1) * r, _cos(v1) * r], axis=1)
            self.n_left[need] = 2
        self.n_left[idx] -= 1
        return self.normals[idx, self.n_left[idx]]


def _per_output(params: np.ndarray, samples: int) -> np.ndarray:
    """Output i = p * samples + s takes parameter p."""
    return np.repeat(params.astype(np.float64).reshape(-1), samples)


def _sample_major(out: np.ndarray, params: np.ndarray, samples: int) -> np.ndarray:
    """[samples, *params.shape] from the outputs in parameter-major order."""
    return out.reshape(params.size, samples).T.reshape((samples,) + params.shape)


def gamma(alpha: np.ndarray, samples: int, key: tuple, counter: tuple) -> np.ndarray:
    """Unit-rate Gamma(alpha) samples [samples, *alpha.shape] (float64) as TF draws them."""
    a = _per_output(alpha, samples)
    streams = _Streams(key, counter, a.size)
    out = np.empty(a.size)
    one = np.flatnonzero(a == 1.0)
    if one.size:
        out[one] = -_log1p(-streams.uniform(one))
    small = a < 1.0
    d = a + np.where(small, 2.0 / 3, -1.0 / 3)
    c = 1.0 / 3 / np.sqrt(d)
    active = np.flatnonzero(a != 1.0)
    while active.size:
        x = streams.normal(active)
        v = 1.0 + c[active] * x
        positive = v > 0
        cand, x, v = active[positive], x[positive], v[positive]
        v = v * v * v
        u = streams.uniform(cand)
        squeeze = u < 1 - 0.0331 * (x * x) * (x * x)
        accept = squeeze.copy()
        rest = ~squeeze
        if rest.any():
            dc = d[cand[rest]]
            accept[rest] = _log(u[rest]) < 0.5 * x[rest] * x[rest] + dc * (
                1 - v[rest] + _log(v[rest]))
        done = cand[accept]
        res = d[done] * v[accept]
        boost = small[done]
        if boost.any():
            b = streams.uniform(done[boost])
            res[boost] *= np.asarray(_pow(b, 1 / a[done[boost]]), np.float64)
        out[done] = res
        active = np.concatenate([active[~positive], cand[~accept]])
    return _sample_major(out, alpha, samples)


def poisson(rate: np.ndarray, samples: int, key: tuple, counter: tuple,
            highest: float) -> np.ndarray:
    """Poisson(rate) samples [samples, *rate.shape] (float64; `highest`: the output dtype's
    largest value, above which a draw is retried) as TF draws them."""
    r = _per_output(rate, samples)
    streams = _Streams(key, counter, r.size)
    out = np.empty(r.size)
    # Knuth below rate 10: multiply uniforms until the product reaches exp(-rate)
    active = np.flatnonzero(r < 10.0)
    limit = _exp(-r)
    prod, count = np.ones(r.size), np.zeros(r.size)
    while active.size:
        prod[active] *= streams.uniform(active)
        stop = (prod[active] <= limit[active]) & (count[active] <= highest)
        out[active[stop]] = count[active[stop]]
        active = active[~stop]
        count[active] += 1
    # Hormann's transformed rejection from rate 10
    big = np.flatnonzero(r >= 10.0)
    log_rate = _log(r[big]) if big.size else np.zeros(0)
    b = 0.931 + 2.53 * np.sqrt(r[big])
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    slot = np.arange(big.size)
    while slot.size:
        idx = big[slot]
        u = streams.uniform(idx) - 0.5
        v = streams.uniform(idx)
        u_shifted = 0.5 - np.abs(u)
        k = np.floor((2 * a[slot] / u_shifted + b[slot]) * u + r[idx] + 0.43)
        fine = k <= highest
        quick = fine & (u_shifted >= 0.07) & (v <= 0.9277 - 3.6224 / (b[slot] - 2))
        test = fine & ~quick & ~((k < 0) | ((u_shifted < 0.013) & (v > u_shifted)))
        accept = quick.copy()
        if test.any():
            t_slot = slot[test]
            s = _log(v[test] * inv_alpha[t_slot] / (a[t_slot] / (u_shifted[test] * u_shifted[test])
                                                    + b[t_slot]))
            t = -r[idx[test]] + k[test] * log_rate[t_slot] - _lgamma(k[test] + 1)
            accept[test] = s <= t
        out[idx[accept]] = k[accept]
        slot = slot[~accept]
    return _sample_major(out, rate, samples)
