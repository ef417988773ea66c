"""``tf.random.stateless_*``: the same seed gives the same numbers, here and in TensorFlow.

Uniform, normal, truncated normal, integer, gamma and Poisson draws reproduce TensorFlow 2.21's
Philox streams bit for bit (ops/philox.py and ops/philox_distributions.py document the
algorithms); categorical and binomial are reproducible functions of the seed but use their own
transforms (not TF's bits).
The ops are pure functions of (seed, shape): no state, so graphs may fold or share them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import philox, philox_distributions
from tapeflow.ops.shape_args import _filled_rule, run_time_shape, shape_operands

_ALGS = {"philox": 1, "auto_select": 3, "threefry": 2, 1: 1, 3: 3}


def _check_alg(alg: Any) -> None:
    name = getattr(alg, "name", alg)
    name = name.lower() if isinstance(name, str) else name
    if name not in _ALGS:
        raise ValueError(f"unsupported random algorithm {alg!r}")
    if name in ("threefry", 2):
        raise NotImplementedError("the ThreeFry algorithm (TPU/XLA only in TensorFlow): use "
                                  "'philox' or 'auto_select'")


def _seed_words(seed: np.ndarray) -> tuple[int, int]:
    s = np.asarray(seed).reshape(-1)
    if s.size != 2:
        raise ValueError(f"a stateless seed must have shape [2], got {list(np.shape(seed))}")
    return int(s[0]), int(s[1])


@op("StatelessRandom", shape=lambda seed, *dims, **attrs: _filled_rule(*dims, **attrs))
def _stateless(seed, *dims, shape, kind, dtype, lo, hi):
    """`kind` in uniform / normal / truncated_normal (floats), int (lo + bits % span), full_int."""
    size_shape = run_time_shape(dims, shape)
    key, counter = philox.key_counter_from_seed(_seed_words(seed))
    return draw(key, counter, size_shape, kind, dtype, lo, hi)


def draw(key: tuple, counter: tuple, shape: tuple, kind: str, dtype: Any, lo: Any,
         hi: Any) -> np.ndarray:
    """`kind` samples of `shape` from the Philox stream at (key, counter)."""
    n = int(np.prod(shape))
    np_dtype = dtype._np
    if kind in ("int", "full_int"):
        per = philox.words_per_value(np_dtype)
        words = philox.bits(key, counter, n * per)
        if kind == "full_int":
            if per == 2:
                w = words.reshape(-1, 2).astype(np.uint64)
                out = (w[:, 0] | (w[:, 1] << np.uint64(32))).view(np.int64)
            else:
                out = words.view(np.int32)
            return out.astype(np_dtype).reshape(shape)
        return philox.uniform_int(words, int(lo), int(hi), np_dtype).reshape(shape)
    base = np.float32 if np_dtype == np.float16 else np_dtype
    values = philox.sample(kind, key, counter, n, base)
    return values.astype(np_dtype).reshape(shape)


def _seed_tensor(seed: Any) -> Tensor:
    t = seed if isinstance(seed, Tensor) else convert_to_tensor(seed)
    if not t.dtype.is_integer:
        raise TypeError(f"a stateless seed must be int32/int64, got {t.dtype.name}")
    return t


def _sample(kind: str, shape: Any, seed: Any, dtype: Any, what: str, lo: Any = None,
            hi: Any = None, alg: Any = "auto_select") -> Tensor:
    _check_alg(alg)
    dims, static = shape_operands(shape, what)
    return apply(_stateless, _seed_tensor(seed), *dims, shape=static, kind=kind,
                 dtype=_dtypes.as_dtype(dtype), lo=lo, hi=hi)


def _scalar(v: Any) -> Any:
    return v.numpy() if hasattr(v, "numpy") else v


@export("random.stateless_uniform")
def stateless_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None,
                      dtype: Any = _dtypes.float32, name: str | None = None,
                      alg: Any = "auto_select") -> Tensor:
    """Uniform in [minval, maxval) (floats default to [0, 1); ints need both bounds, or
    neither for the full range), deterministic in `seed`."""
    dtype = _dtypes.as_dtype(dtype)
    what = "tf.random.stateless_uniform"
    if dtype.is_integer:
        if minval is None and maxval is None:
            return _sample("full_int", shape, seed, dtype, what, alg=alg)
        if maxval is None:
            raise ValueError(f"{what}: maxval must be given for integer dtypes")
        lo, hi = int(_scalar(minval)), int(_scalar(maxval))
        if not lo < hi:
            raise ValueError(f"{what}: need minval < maxval, got {lo} and {hi}")
        return _sample("int", shape, seed, dtype, what, lo, hi, alg)
    rnd = _sample("uniform", shape, seed, dtype, what, alg=alg)
    lo = convert_to_tensor(0 if minval is None else minval, dtype)
    hi = convert_to_tensor(1 if maxval is None else maxval, dtype)
    return rnd * (hi - lo) + lo  # TF's formula: exact for [0, 1)


@export("random.stateless_normal")
def stateless_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                     dtype: Any = _dtypes.float32, name: str | None = None,
                     alg: Any = "auto_select") -> Tensor:
    rnd = _sample("normal", shape, seed, dtype, "tf.random.stateless_normal", alg=alg)
    return _scale(rnd, mean, stddev)


@export("random.stateless_truncated_normal")
def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = _dtypes.float32, name: str | None = None,
                               alg: Any = "auto_select") -> Tensor:
    """Normal values within two standard deviations of the mean."""
    rnd = _sample("truncated_normal", shape, seed, dtype, "tf.random.stateless_truncated_normal",
                  alg=alg)
    return _scale(rnd, mean, stddev)


def _scale(rnd: Tensor, mean: Any, stddev: Any) -> Tensor:
    if not isinstance(mean, Tensor) and not isinstance(stddev, Tensor) and mean == 0 \
            and stddev == 1:
        return rnd
    return rnd * convert_to_tensor(stddev, rnd.dtype) + convert_to_tensor(mean, rnd.dtype)


# --- distributions with their own transforms (reproducible, not TF's bits) --------------------


def numpy_generator(seed: np.ndarray) -> np.random.Generator:
    """A NumPy generator fixed by a stateless seed (through the Philox key and counter)."""
    key, counter = philox.key_counter_from_seed(_seed_words(seed))
    return np.random.default_rng([key[0], key[1], counter[1] & 0xFFFFFFFF, counter[1] >> 32])


@op("StatelessRandomDistribution", shape=lambda seed, *params, shape, kind, dtype: (shape, dtype))
def _distribution(seed, *params, shape, kind, dtype):
    gen = numpy_generator(seed)
    if kind == "binomial":
        counts, probs = np.broadcast_arrays(*params)
        out = gen.binomial(np.broadcast_to(counts, shape).astype(np.int64),
                           np.broadcast_to(probs, shape), size=shape)
    else:
        logits = params[0]
        u = gen.random((logits.shape[0], shape[1], logits.shape[1]))
        out = np.argmax(logits[:, None, :] - np.log(-np.log(u)), axis=-1)
    return out.astype(dtype._np)


def _static_shape(shape: Any) -> tuple:
    return tuple(int(d) for d in np.asarray(_scalar(shape)).reshape(-1))


@export("random.stateless_binomial")
def stateless_binomial(shape: Any, seed: Any, counts: Any, probs: Any,
                       output_dtype: Any = _dtypes.int32, name: str | None = None) -> Tensor:
    return apply(_distribution, _seed_tensor(seed), convert_to_tensor(counts),
                 convert_to_tensor(probs), shape=_static_shape(shape), kind="binomial",
                 dtype=_dtypes.as_dtype(output_dtype))


def _suffix_samples(shape: tuple, params: np.ndarray, what: str) -> int:
    """How many samples per parameter: `shape` must end with the parameters' shape (TF)."""
    if tuple(shape[len(shape) - params.ndim:]) != params.shape or params.ndim > len(shape):
        raise errors.InvalidArgumentError(
            f"{what}: shape {list(shape)} must end with the broadcast shape of the parameters "
            f"{list(params.shape)}")
    return int(np.prod(shape)) // max(params.size, 1)


@op("StatelessRandomGammaV3", shape=lambda seed, alpha, *, shape, dtype: (shape, dtype))
def _stateless_gamma(seed, alpha, *, shape, dtype):
    """TF's stateless gamma kernel (ops/philox_distributions.py) on the seed's key/counter."""
    samples = _suffix_samples(shape, alpha, "stateless_gamma")
    key, counter = philox.key_counter_from_seed(_seed_words(seed))
    return philox_distributions.gamma(alpha, samples, key, counter).reshape(shape).astype(
        dtype._np)


@_stateless_gamma.def_grad
def _(g, out, seed, alpha, *, shape, dtype):
    from tapeflow.ops.random_ops import _gamma_alpha_grad

    return None, _gamma_alpha_grad(g, alpha, out)


@op("StatelessRandomPoisson", shape=lambda seed, lam, *, shape, dtype: (shape, dtype))
def _stateless_poisson(seed, lam, *, shape, dtype):
    """TF's stateless Poisson kernel (ops/philox_distributions.py)."""
    samples = _suffix_samples(shape, lam, "stateless_poisson")
    key, counter = philox.key_counter_from_seed(_seed_words(seed))
    np_dtype = dtype._np
    highest = float(np.iinfo(np_dtype).max if np.issubdtype(np_dtype, np.integer)
                    else np.finfo(np_dtype).max)
    return philox_distributions.poisson(lam, samples, key, counter, highest).reshape(
        shape).astype(np_dtype)


@export("random.stateless_poisson")
def stateless_poisson(shape: Any, seed: Any, lam: Any, dtype: Any = _dtypes.int32,
                      name: str | None = None) -> Tensor:
    """Poisson(lam) samples of `shape` (which ends with lam's shape): TF 2.21's numbers."""
    lam_t = convert_to_tensor(lam, _dtypes.float32 if not hasattr(lam, "dtype") else None)
    return apply(_stateless_poisson, _seed_tensor(seed), lam_t, shape=_static_shape(shape),
                 dtype=_dtypes.as_dtype(dtype))


@export("random.stateless_gamma")
def stateless_gamma(shape: Any, seed: Any, alpha: Any, beta: Any = None,
                    dtype: Any = _dtypes.float32, name: str | None = None) -> Tensor:
    """Gamma(alpha, rate beta) samples of `shape` (which ends with broadcast(alpha, beta)'s
    shape): TF 2.21's numbers; differentiable in alpha and beta."""
    from tapeflow.ops.random_ops import _broadcast_alpha, _gamma_finish

    dtype = _dtypes.as_dtype(dtype)
    a = convert_to_tensor(alpha, dtype)
    b = convert_to_tensor(1.0 if beta is None else beta, dtype)
    raw = apply(_stateless_gamma, _seed_tensor(seed), _broadcast_alpha(a, b),
                shape=_static_shape(shape), dtype=dtype)
    return _gamma_finish(raw, b, dtype)


@export("random.stateless_categorical")
def stateless_categorical(logits: Any, num_samples: int, seed: Any, dtype: Any = _dtypes.int64,
                          name: str | None = None) -> Tensor:
    """Class indices drawn from unnormalized log-probabilities (Gumbel-max)."""
    lg = convert_to_tensor(logits)
    rows = lg.shape[0]
    return apply(_distribution, _seed_tensor(seed), lg, shape=(rows, int(num_samples)),
                 kind="categorical", dtype=_dtypes.as_dtype(dtype))


@export("random.experimental.stateless_split", "random.split")
def stateless_split(seed: Any, num: int = 2, alg: Any = "auto_select") -> Tensor:
    """`num` new seeds ([num, 2]) from `seed`, as TensorFlow derives them."""
    s = _seed_tensor(seed)
    return stateless_uniform([num, 2], s, minval=None, maxval=None, dtype=s.dtype, alg=alg)


@export("random.experimental.stateless_fold_in", "random.fold_in")
def stateless_fold_in(seed: Any, data: Any, alg: Any = "auto_select") -> Tensor:
    """A new seed from `seed` and an integer `data` (e.g. a step or replica number)."""
    from tapeflow.ops.array_ops import stack

    d = convert_to_tensor(data) if not isinstance(data, Tensor) else data
    s = _seed_tensor(seed)
    first = stateless_uniform([], s, minval=None, maxval=None, dtype=d.dtype, alg=alg)
    return stack([first, d])


@op("StatelessParameterizedTruncatedNormal", shape=lambda seed, *params, shape, dtype: (
    shape, dtype))
def _param_truncated(seed, means, stddevs, minvals, maxvals, *, shape, dtype):
    """Inverse-CDF sampling of each normal truncated to [minval, maxval] from the seed's Philox
    uniforms (reproducible, not TF's bits), on the side of the mean that keeps precision."""
    from scipy import special

    key, counter = philox.key_counter_from_seed(_seed_words(seed))
    u = philox.sample("uniform", key, counter, int(np.prod(shape)), np.float64).reshape(shape)
    mean, std, lo, hi = (np.broadcast_to(p, shape).astype(np.float64)
                         for p in (means, stddevs, minvals, maxvals))
    a, b = (lo - mean) / std, (hi - mean) / std
    flip = a > 0  # sample the mirrored interval, whose CDF values are not close to 1
    a, b = np.where(flip, -b, a), np.where(flip, -a, b)
    pa, pb = special.ndtr(a), special.ndtr(b)
    z = special.ndtri(pa + u * (pb - pa))
    z = np.clip(np.where(flip, -z, z), np.where(flip, -b, a), np.where(flip, -a, b))
    return (mean + std * z).astype(dtype._np)


@export("random.stateless_parameterized_truncated_normal")
def stateless_parameterized_truncated_normal(shape: Any, seed: Any, means: Any = 0.0,
                                             stddevs: Any = 1.0, minvals: Any = -2.0,
                                             maxvals: Any = 2.0, name: str | None = None) -> Tensor:
    """Normal(means, stddevs) samples truncated to [minvals, maxvals] (each broadcast to
    `shape`); deterministic in the seed (TF's sampler is not reproduced bit for bit)."""
    m = convert_to_tensor(means)
    dtype = m.dtype if m.dtype.is_floating else _dtypes.float32
    params = [convert_to_tensor(p, dtype) for p in (means, stddevs, minvals, maxvals)]
    return apply(_param_truncated, _seed_tensor(seed), *params, shape=_static_shape(shape),
                 dtype=dtype)


def _feistel(index: np.ndarray, key: tuple, max_index: int, rounds: int) -> np.ndarray:
    """A seeded bijection of [0, max_index]: a balanced Feistel network on the smallest even
    number of bits covering it (Philox as the round function), cycle-walked into range."""
    n = int(max_index) + 1
    bits = max(2, int(np.ceil(np.log2(max(n, 2)))))
    bits += bits % 2
    half = bits // 2
    mask = np.uint64((1 << half) - 1)
    x = index.astype(np.uint64).copy()
    todo = np.ones(x.shape, bool)
    while todo.any():
        left, right = x[todo] >> np.uint64(half), x[todo] & mask
        for r in range(rounds):
            counters = np.zeros((left.size, 4), np.uint32)
            counters[:, 0] = right.astype(np.uint32)
            counters[:, 1] = r
            f = philox.philox(counters, key)[:, 0].astype(np.uint64) & mask
            left, right = right, left ^ f
        x[todo] = (left << np.uint64(half)) | right
        todo = x >= np.uint64(n)
    return x


@op("RandomIndexShuffle", shape=lambda index, seed, max_index, *, rounds: index)
def _index_shuffle(index, seed, max_index, *, rounds):
    """Not TF's bijection: a reproducible one of its own, from the same arguments."""
    words = np.asarray(seed).reshape(-1).astype(np.int64)
    key, _ = philox.key_counter_from_seed((int(words[0]), int(words[1:].sum())))
    out = _feistel(np.asarray(index), key, int(max_index), int(rounds))
    return out.astype(index.dtype)


@export("random_index_shuffle")
def random_index_shuffle(index: Any, seed: Any, max_index: Any, rounds: int = 4,
                         name: str | None = None) -> Tensor:
    """The position of `index` under a seeded permutation of [0, max_index] (a bijection:
    distinct indices map to distinct positions; not TF's permutation)."""
    i = convert_to_tensor(index)
    return apply(_index_shuffle, i, convert_to_tensor(seed), convert_to_tensor(max_index, i.dtype),
                 rounds=int(rounds))


@export("random.experimental.index_shuffle")
def index_shuffle(index: Any, seed: Any, max_index: Any) -> Tensor:
    """random_index_shuffle with TF's [2]- or [3]-element seed."""
    return random_index_shuffle(index, seed, max_index)


@export("random.experimental.stateless_shuffle")
def stateless_shuffle(value: Any, seed: Any, alg: Any = "auto_select",
                      name: str | None = None) -> Tensor:
    """`value` permuted along its first dimension, the permutation a function of the seed."""
    from tapeflow.ops import array_ops, creation_ops, gather_ops

    _check_alg(alg)
    x = convert_to_tensor(value)
    n = array_ops.shape(x, out_type=_dtypes.int64)[0]
    positions = index_shuffle(creation_ops.range_(n, dtype=_dtypes.int64), seed, n - 1)
    return gather_ops.gather(x, positions)
