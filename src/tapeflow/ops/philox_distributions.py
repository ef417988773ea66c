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

Each output's scalar arithmetic runs in Python floats (C doubles and libm, as the kernels); the
first blocks of every output are drawn in one vectorized Philox call.
"""

from __future__ import annotations

import math

import numpy as np

from tapeflow.ops import philox

_PER_OUTPUT = 256


class _Blocks:
    """The Philox blocks of every output: the first `prefetch` drawn up front, more on demand."""

    def __init__(self, key: tuple, counter: tuple, n_outputs: int, prefetch: int):
        self.key, self.counter, self.prefetch = key, counter, prefetch
        offsets = (np.arange(n_outputs, dtype=np.uint64)[:, None] * np.uint64(_PER_OUTPUT)
                   + np.arange(prefetch, dtype=np.uint64)[None, :]).reshape(-1)
        self.words = philox.philox(_counters(counter, offsets), key).reshape(
            n_outputs, prefetch, 4)

    def block(self, output: int, j: int) -> np.ndarray:
        if j < self.prefetch:
            return self.words[output, j]
        offset = np.asarray([output * _PER_OUTPUT + j], np.uint64)
        return philox.philox(_counters(self.counter, offset), self.key)[0]


def _counters(counter: tuple, offsets: np.ndarray) -> np.ndarray:
    """[n, 4] uint32 128-bit counters `counter` + each offset (carrying into the high half)."""
    lo0 = np.uint64(int(counter[0]) & philox.MASK64)
    lo = lo0 + offsets
    carry = (lo < lo0).astype(np.uint64)
    hi = np.uint64(int(counter[1]) & philox.MASK64) + carry
    low, shift = np.uint64(0xFFFFFFFF), np.uint64(32)
    return np.stack([lo & low, lo >> shift, hi & low, hi >> shift], axis=1).astype(np.uint32)


class _Draws:
    """One output's stream of doubles: uniform() and normal() each take a Philox block when
    their two values are used up and hand them out last first (TF's UNIFORM / NORMAL)."""

    __slots__ = ("blocks", "output", "next_block", "uniforms", "normals")

    def __init__(self, blocks: _Blocks, output: int):
        self.blocks, self.output, self.next_block = blocks, output, 0
        self.uniforms: list = []
        self.normals: list = []

    def _words(self) -> np.ndarray:
        w = self.blocks.block(self.output, self.next_block)
        self.next_block += 1
        return w

    def uniform(self) -> float:
        if not self.uniforms:
            self.uniforms = philox.uniform_float(self._words(), np.float64).tolist()
        return self.uniforms.pop()

    def normal(self) -> float:
        if not self.normals:
            u1, u2 = philox.uniform_float(self._words(), np.float64).tolist()
            u1 = max(u1, 1.0e-7)
            v1 = 2.0 * math.pi * u2
            r = math.sqrt(-2.0 * math.log(u1))
            self.normals = [math.sin(v1) * r, math.cos(v1) * r]
        return self.normals.pop()


def _gamma_one(draws: _Draws, alpha: float) -> float:
    if alpha == 1.0:
        return -math.log1p(-draws.uniform())
    small = alpha < 1.0
    d = alpha + (2.0 / 3 if small else -1.0 / 3)
    c = 1.0 / 3 / math.sqrt(d)
    while True:
        x = draws.normal()
        v = 1.0 + c * x
        if v <= 0:
            continue
        v = v * v * v
        u = draws.uniform()
        if u < 1 - 0.0331 * (x * x) * (x * x) or math.log(u) < 0.5 * x * x + d * (
                1 - v + math.log(v)):
            res = d * v
            if small:
                res *= math.pow(draws.uniform(), 1 / alpha)
            return res


def _poisson_one(draws: _Draws, rate: float, highest: float) -> float:
    if rate < 10.0:
        limit, prod, x = math.exp(-rate), 1.0, 0.0
        while True:
            prod *= draws.uniform()
            if prod <= limit and x <= highest:
                return x
            x += 1
    log_rate = math.log(rate)
    b = 0.931 + 2.53 * math.sqrt(rate)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    while True:
        u = draws.uniform() - 0.5
        v = draws.uniform()
        u_shifted = 0.5 - abs(u)
        k = math.floor((2 * a / u_shifted + b) * u + rate + 0.43)
        if k > highest:
            continue
        if u_shifted >= 0.07 and v <= 0.9277 - 3.6224 / (b - 2):
            return k
        if k < 0 or (u_shifted < 0.013 and v > u_shifted):
            continue
        s = math.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -rate + k * log_rate - math.lgamma(k + 1)
        if s <= t:
            return k


def _run(params: np.ndarray, samples: int, key: tuple, counter: tuple, one, prefetch: int
         ) -> np.ndarray:
    """[samples, params.size] float64: output (p, s) from draws at p * samples + s."""
    flat = params.astype(np.float64).reshape(-1).tolist()
    blocks = _Blocks(key, counter, len(flat) * samples, prefetch)
    out = np.empty((samples, len(flat)))
    for p, value in enumerate(flat):
        for s in range(samples):
            out[s, p] = one(_Draws(blocks, p * samples + s), value)
    return out


def gamma(alpha: np.ndarray, samples: int, key: tuple, counter: tuple) -> np.ndarray:
    """Unit-rate Gamma(alpha) samples [samples, *alpha.shape] (float64) as TF draws them."""
    return _run(alpha, samples, key, counter, _gamma_one, 2).reshape(
        (samples,) + alpha.shape)


def poisson(rate: np.ndarray, samples: int, key: tuple, counter: tuple,
            highest: float) -> np.ndarray:
    """Poisson(rate) samples [samples, *rate.shape] (float64; `highest`: the output dtype's
    largest value, above which a draw is retried) as TF draws them."""
    small = rate[rate < 10.0]
    prefetch = 2 if small.size == 0 else int(min(16, 2 + (small.max() + 4) // 2))
    one = lambda draws, r: _poisson_one(draws, r, highest)  # noqa: E731
    return _run(rate, samples, key, counter, one, prefetch).reshape((samples,) + rate.shape)
