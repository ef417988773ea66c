"""Random ops with TensorFlow's seed semantics, and the generator helpers other modules use.

Seeds, as ``tf.random.set_seed`` documents them:

- no global seed and no op seed: fresh randomness every program run;
- a global seed and no op seed: each random call takes the next op seed from a counter that
  ``set_seed`` resets, so the sequence of random calls repeats across program runs;
- an op seed and no global seed: the global seed defaults to a fixed constant;
- both: the (global, op) pair picks a stream; calling again continues that stream, and
  ``set_seed`` restarts every stream.

Helpers for other engineers (dropout, Keras initializers, tf.data):

- ``make_generator(seed=None) -> np.random.Generator`` for a stateful random op. Put it in the op's
  attributes and draw from it in the kernel: eager calls follow the rules above, and a traced
  function draws new values on every call from the generator its node holds.
- ``next_seed(seed=None) -> int | None`` an integer seed derived the same way, for stateless use
  (a seeded Keras initializer gives the same values every time it is called with ``seed``).

While ``context.state.seed_offset`` is set (tf.data does it around each element's map call) and
some seed is set, the offset is mixed in: each element gets its own reproducible stream, whatever
the order in which worker threads run (op seeds left None count from 0 again whenever the
offset changes).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import config as _config
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops.shape_args import _filled_rule, run_time_shape, shape_operands

DEFAULT_GLOBAL_SEED = 87654321  # used when only an op seed is given

_lock = threading.Lock()
_global = {"seed": None, "counter": 0, "streams": {}}
_entropy = np.random.default_rng()
_per_offset = threading.local()  # op-seed counter restarted for each tf.data element


@export("random.set_seed")
def set_seed(seed: int | None) -> None:
    """Set the global seed: the sequence of random calls after it repeats across runs."""
    with _lock:
        _global["seed"] = None if seed is None else int(seed)
        _global["counter"] = 0
        _global["streams"] = {}


def get_global_seed() -> int | None:
    """The seed last given to ``tf.random.set_seed`` (None when unset)."""
    return _global["seed"]


def require_seed(seed: int | None) -> None:
    """TensorFlow's rule under ``enable_op_determinism``: a random op (or a shuffle) with
    neither a global nor an op seed is an error."""
    if seed is None and _global["seed"] is None and _config.op_determinism_enabled():
        raise RuntimeError("Random ops require a seed to be set when determinism is enabled. "
                           "Please set a seed before running the op, e.g. by calling "
                           "tf.random.set_seed(1).")


def _seed_pair(seed: int | None, for_op: bool = True) -> tuple | None:
    """(global, op) seeds for one random call, or None for fresh entropy. `for_op`: the call
    draws random numbers (refused without seeds under op determinism)."""
    global_seed = _global["seed"]
    if global_seed is None and seed is None:
        if for_op:
            require_seed(seed)
        return None
    if global_seed is None:
        global_seed = DEFAULT_GLOBAL_SEED
    if seed is None:
        if _state.seed_offset is not None:
            return global_seed, _offset_counter()
        with _lock:
            seed = _global["counter"]
            _global["counter"] += 1
    return global_seed, int(seed)


def _offset_counter() -> int:
    offset = _state.seed_offset
    if getattr(_per_offset, "offset", None) != offset:
        _per_offset.offset, _per_offset.count = offset, 0
    n = _per_offset.count
    _per_offset.count += 1
    return n


def _entropy_for(pair: tuple) -> list:
    words = [int(v) % (2**63) for v in pair]
    if _state.seed_offset is not None:
        words.append(int(_state.seed_offset) % (2**63))
    return words


def make_generator(seed: int | None = None) -> np.random.Generator:
    """The NumPy generator a random op draws from (see the module docstring for the rules)."""
    return _generator_for(_seed_pair(seed))


def _generator_for(pair: tuple | None) -> np.random.Generator:
    if pair is None:
        return _entropy
    if _state.seed_offset is not None:
        return np.random.default_rng(_entropy_for(pair))
    with _lock:
        streams = _global["streams"]
        gen = streams.get(pair)
        if gen is None:
            gen = streams[pair] = np.random.default_rng(_entropy_for(pair))
    return gen


def next_seed(seed: int | None = None) -> int | None:
    """An integer seed for stateless randomness, derived like ``make_generator``'s stream
    (None without seeds: callers that draw numbers check ``require_seed`` themselves)."""
    pair = _seed_pair(seed, for_op=False)
    if pair is None:
        return None
    return int(np.random.SeedSequence(_entropy_for(pair)).generate_state(1)[0])


# --- eager draws with TensorFlow's numbers ------------------------------------------------------
#
# Eagerly (outside tf.data maps), a seeded tf.random.uniform/normal/truncated_normal gives
# TensorFlow 2.21's numbers: an implicit op seed is the k-th draw of Python's
# random.Random(global_seed).randint(0, 2**31 - 1) (TF's eager context does exactly this), both
# seeds are taken modulo 2**31 - 1, the kernel's Philox key is the global seed and its counter
# starts at (0, op seed); a repeated explicit op seed continues its stream (TF caches the kernel),
# advancing 256 counters per output, and set_seed restarts everything. Inside a traced function
# the implicit op seeds are 0, 1, 2... in creation order (TF's FuncGraph), and each op is a
# kernel of its own whose counter advances from call to call. tf.data maps keep the NumPy
# streams above (same rules, not TF's bits).

_MAXINT32 = 2**31 - 1


def _tf_op_seed(global_seed: int, k: int) -> int:
    """The k-th implicit op seed TensorFlow's eager context hands out after set_seed."""
    import random as _random

    with _lock:
        cache = _global["streams"].setdefault(("tf_op_seeds", global_seed),
                                              (_random.Random(global_seed), []))
        rng, seeds = cache
        while len(seeds) <= k:
            seeds.append(rng.randint(0, _MAXINT32))
        return seeds[k]


def _tf_stream(kind: str, shape: tuple, dtype: Any, seed: int | None,
               pair: tuple) -> tuple:
    """(key, counter) of TF's kernel for this eager call, advancing its cached stream."""
    g, s = pair
    if seed is None:
        s = _tf_op_seed(g, s)
    g, s = g % _MAXINT32, s % _MAXINT32
    if (g, s) == (0, 0):
        s = _MAXINT32
    n = int(np.prod(shape))
    with _lock:
        key = ("tf_kernel", kind, dtype, g, s)
        offset = _global["streams"].get(key, 0)
        _global["streams"][key] = offset + 256 * n
    return (g & 0xFFFFFFFF, g >> 32), (offset, s)


def _finish(raw: np.ndarray, kind: str, dtype: Any, lo: Any, hi: Any, mean: Any,
            stddev: Any) -> np.ndarray:
    """TF's Python wrappers' scaling of the kernel's numbers, in the output dtype."""
    np_dtype = dtype._np
    if kind == "uniform":
        span = np.asarray(hi, np_dtype) - np.asarray(lo, np_dtype)
        return (raw * span + np.asarray(lo, np_dtype)).astype(np_dtype, copy=False)
    if kind in ("normal", "truncated_normal"):
        out = raw * np.asarray(stddev, np_dtype) + np.asarray(mean, np_dtype)
        return out.astype(np_dtype, copy=False)
    return raw


class _TracedStream:
    """One traced random op's kernel state, as TensorFlow keeps it: its Philox key and op seed
    fixed when traced, its counter advancing 256 per output on each run (restarted by
    set_seed, which clears the streams)."""

    def __init__(self, key: tuple, op_seed: int, n: int):
        self.key, self.op_seed, self.n = key, op_seed, n

    def counter(self) -> tuple:
        with _lock:
            name = ("tf_traced_kernel", id(self))
            offset = _global["streams"].get(name, 0)
            _global["streams"][name] = offset + 256 * self.n
        return offset, self.op_seed


@op("TFRandom", random=True,
    shape=lambda *, stream, shape, kind, dtype, lo, hi, mean, stddev: (shape, dtype))
def _tf_random(*, stream, shape, kind, dtype, lo, hi, mean, stddev):
    from tapeflow.ops.stateless_random import draw

    raw = draw(stream.key, stream.counter(), shape, kind, dtype, lo, hi)
    return _finish(raw, kind, dtype, lo, hi, mean, stddev)


def _traced_op_seed(graph: Any) -> int:
    """TensorFlow's implicit op seed in a traced function: 0, 1, 2... in creation order."""
    k = getattr(graph, "_tf_random_ops", 0)
    graph._tf_random_ops = k + 1
    return k


class _EagerStream:
    """The (key, counter) TF's kernel uses for one eager call."""

    def __init__(self, key: tuple, counter: tuple):
        self.key, self._counter = key, counter

    def counter(self) -> tuple:
        return self._counter


def _kernel_stream(kind: str, shape: tuple, dtype: Any, seed: int | None) -> Any:
    """The Philox stream TF's stateful kernel `kind` would use for a seeded call producing
    `shape` outputs (eager: this call's key and counter; traced: the node's advancing kernel
    state), or None when the call takes the NumPy path (tf.data maps, no seeds)."""
    if _state.seed_offset is not None:
        return None
    if _global["seed"] is None and seed is None:
        return None
    graph = _state.graph
    if graph is not None:
        g = _global["seed"] if _global["seed"] is not None else DEFAULT_GLOBAL_SEED
        s = _traced_op_seed(graph) if seed is None else int(seed)
        g, s = g % _MAXINT32, s % _MAXINT32
        if (g, s) == (0, 0):
            s = _MAXINT32
        return _TracedStream((g & 0xFFFFFFFF, g >> 32), s, int(np.prod(shape)))
    key, counter = _tf_stream(kind, shape, dtype, seed, _seed_pair(seed))
    return _EagerStream(key, counter)


def _tf_draw(kind: str, shape: Any, dtype: Any, seed: int | None, lo: Any = None,
             hi: Any = None, mean: Any = 0.0, stddev: Any = 1.0) -> Any:
    """TF's numbers for a seeded draw (eager, or traced in a tf.function), or None when this
    call takes the NumPy path (tf.data maps, no seeds, run-time shapes)."""
    if _state.seed_offset is not None or (_global["seed"] is None and seed is None):
        return None
    dims, static = shape_operands(shape, f"tf.random.{kind}")
    if dims:
        return None
    from tapeflow.framework.tensor import wrap
    from tapeflow.ops.stateless_random import draw

    stream = _kernel_stream(kind, static, dtype, seed)
    if _state.graph is not None:
        return apply(_tf_random, stream=stream, shape=static, kind=kind, dtype=dtype,
                     lo=lo, hi=hi, mean=_value(mean), stddev=_value(stddev))
    raw = draw(stream.key, stream.counter(), static, kind, dtype, lo, hi)
    return wrap(_finish(raw, kind, dtype, lo, hi, _value(mean), _value(stddev)))


# --- ops --------------------------------------------------------------------------------------


def _float_sample(gen: np.random.Generator, fn: str, shape: tuple, dtype) -> np.ndarray:
    """Floats from `gen` in `dtype` (float16 is drawn as float32, as NumPy has no float16 path)."""
    np_dtype = np.float64 if dtype is _dtypes.float64 else np.float32
    return getattr(gen, fn)(shape, dtype=np_dtype)


@op("RandomUniform", random=True, shape=_filled_rule)
def _uniform(*dims, shape, dtype, minval, maxval, gen):
    shape = run_time_shape(dims, shape)
    if dtype.is_integer:
        return gen.integers(minval, maxval, size=shape, dtype=dtype._np)
    u = _float_sample(gen, "random", shape, dtype)
    return (u * (maxval - minval) + minval).astype(dtype._np, copy=False)


@op("RandomStandardNormal", random=True, shape=_filled_rule)
def _normal(*dims, shape, dtype, mean, stddev, gen):
    shape = run_time_shape(dims, shape)
    z = _float_sample(gen, "standard_normal", shape, dtype)
    return (z * stddev + mean).astype(dtype._np, copy=False)


@op("TruncatedNormal", random=True, shape=_filled_rule)
def _truncated_normal(*dims, shape, dtype, mean, stddev, gen):
    shape = run_time_shape(dims, shape)
    z = _float_sample(gen, "standard_normal", shape, dtype)
    bad = np.abs(z) > 2
    while bad.any():  # redraw values more than two standard deviations out
        z[bad] = _float_sample(gen, "standard_normal", (int(bad.sum()),), dtype)
        bad = np.abs(z) > 2
    return (z * stddev + mean).astype(dtype._np, copy=False)


@op("RandomShuffle", random=True, shape=lambda x, *, gen: x)
def _shuffle(x, *, gen):
    return gen.permutation(x, axis=0) if x.ndim else x


@op("Multinomial", random=True, shape=lambda logits, *, num_samples, dtype, gen: (
    None if logits[0] is None else (logits[0][0], num_samples), dtype))
def _categorical(logits, *, num_samples, dtype, gen):
    if logits.ndim != 2:
        raise ValueError(f"logits must be [batch, num_classes], got shape {list(logits.shape)}")
    gumbel = -np.log(-np.log(gen.random((logits.shape[0], num_samples, logits.shape[1]))))
    return np.argmax(logits[:, None, :] + gumbel, axis=-1).astype(dtype._np)


# --- public API -------------------------------------------------------------------------------


def _value(v: Any) -> Any:
    return v.numpy() if hasattr(v, "numpy") else v


def _float_dtype(dtype: Any, op_name: str) -> _dtypes.DType:
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"{op_name}: dtype must be floating point, got {dtype.name}")
    return dtype


@export("random.uniform")
def uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dtypes.float32,
            seed: int | None = None, name: str | None = None):
    """Uniform values in [minval, maxval): floats default to [0, 1); ints need maxval."""
    dtype = _dtypes.as_dtype(dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("tf.random.uniform: maxval must be given for integer dtypes")
        maxval = 1
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"tf.random.uniform: unsupported dtype {dtype.name}")
    lo, hi = _value(minval), _value(maxval)
    if dtype.is_integer and not lo < hi:
        raise ValueError(f"tf.random.uniform: need minval < maxval, got {lo} and {hi}")
    tf_numbers = _tf_draw("int" if dtype.is_integer else "uniform", shape, dtype, seed, lo, hi)
    if tf_numbers is not None:
        return tf_numbers
    dims, static = shape_operands(shape, "tf.random.uniform")
    return apply(_uniform, *dims, shape=static, dtype=dtype, minval=lo, maxval=hi,
                 gen=make_generator(seed))


@export("random.normal")
def normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dtypes.float32,
           seed: int | None = None, name: str | None = None):
    """Normally distributed values."""
    dtype = _float_dtype(dtype, "tf.random.normal")
    tf_numbers = _tf_draw("normal", shape, dtype, seed, mean=mean, stddev=stddev)
    if tf_numbers is not None:
        return tf_numbers
    dims, static = shape_operands(shape, "tf.random.normal")
    return apply(_normal, *dims, shape=static, dtype=dtype,
                 mean=_value(mean), stddev=_value(stddev), gen=make_generator(seed))


@export("random.truncated_normal")
def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
                     dtype: Any = _dtypes.float32, seed: int | None = None,
                     name: str | None = None):
    """Normal values, redrawn when more than two standard deviations from the mean."""
    dtype = _float_dtype(dtype, "tf.random.truncated_normal")
    tf_numbers = _tf_draw("truncated_normal", shape, dtype, seed, mean=mean, stddev=stddev)
    if tf_numbers is not None:
        return tf_numbers
    dims, static = shape_operands(shape, "tf.random.truncated_normal")
    return apply(_truncated_normal, *dims, shape=static, dtype=dtype,
                 mean=_value(mean), stddev=_value(stddev), gen=make_generator(seed))


@export("random.shuffle")
def shuffle(value: Any, seed: int | None = None, name: str | None = None):
    """A random permutation of `value` along its first dimension."""
    from tapeflow.ops.array_ops import _tensor

    return apply(_shuffle, _tensor(value), gen=make_generator(seed))


@export("random.categorical")
def categorical(logits: Any, num_samples: int, dtype: Any = None, seed: int | None = None,
                name: str | None = None):
    """Draw `num_samples` class indices per row of unnormalized log-probabilities (int64)."""
    from tapeflow.ops.array_ops import _tensor

    dtype = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype)
    return apply(_categorical, _tensor(logits), num_samples=int(num_samples), dtype=dtype,
                 gen=make_generator(seed))


@op("RandomGamma", random=True, shape=lambda alpha, *, shape, dtype, gen: (
    None if alpha[0] is None else tuple(shape) + tuple(alpha[0]), dtype))
def _gamma(alpha, *, shape, dtype, gen):
    draw = gen.gamma(alpha.astype(np.float64), size=tuple(shape) + alpha.shape)
    return draw.astype(dtype._np)


@op("TFRandomGamma", random=True, shape=lambda alpha, *, stream, shape, dtype: (
    None if alpha[0] is None else tuple(shape) + tuple(alpha[0]), dtype))
def _tf_gamma(alpha, *, stream, shape, dtype):
    """TF's RandomGamma kernel (ops/philox_distributions.py)."""
    from tapeflow.ops import philox_distributions

    samples = philox_distributions.gamma(alpha, int(np.prod(shape)), stream.key,
                                         stream.counter())
    return samples.reshape(tuple(shape) + alpha.shape).astype(dtype._np)


@op("RandomGammaGrad", shape=lambda alpha, sample: sample)
def _gamma_sample_grad(alpha, sample):
    """d sample / d alpha of Gamma(alpha, 1) samples by implicit reparameterization (TF's
    RandomGammaGrad): -(dF/dalpha) / pdf at the sample, F the regularized incomplete gamma.
    dF/dalpha is a central difference of whichever of P and Q = 1 - P is smaller (no
    cancellation in either tail), in float64."""
    from scipy import special

    a = np.broadcast_to(alpha, sample.shape).astype(np.float64)
    x = np.maximum(sample.astype(np.float64), np.finfo(np.float64).tiny)
    h = 1e-5 * a
    lower = special.gammainc(a, x) < 0.5
    fn = np.where(lower, 1.0, -1.0)
    plus = np.where(lower, special.gammainc(a + h, x), special.gammaincc(a + h, x))
    minus = np.where(lower, special.gammainc(a - h, x), special.gammaincc(a - h, x))
    d_cdf = fn * (plus - minus) / (2 * h)
    log_pdf = (a - 1) * np.log(x) - x - special.gammaln(a)
    return (-d_cdf * np.exp(-log_pdf)).astype(sample.dtype)


def _gamma_alpha_grad(g: Any, alpha: Any, out: Any) -> Any:
    """The gradient reaching alpha from the samples `out` ([samples..., alpha.shape])."""
    from tapeflow.ops import reduce_ops

    per_sample = g * apply(_gamma_sample_grad, alpha, out)
    lead = out.shape.rank - alpha.shape.rank
    return reduce_ops.reduce_sum(per_sample, axis=list(range(lead))) if lead else per_sample


@_gamma.def_grad
def _(g, out, alpha, *, shape, dtype, gen):
    return _gamma_alpha_grad(g, alpha, out)


@_tf_gamma.def_grad
def _(g, out, alpha, *, stream, shape, dtype):
    return _gamma_alpha_grad(g, alpha, out)


def _broadcast_alpha(alpha: Any, beta: Any) -> Any:
    from tapeflow.ops import array_ops

    if alpha.shape == beta.shape:
        return alpha
    return array_ops.broadcast_to(alpha, np.broadcast_shapes(tuple(alpha.shape),
                                                             tuple(beta.shape)))


def _gamma_finish(raw: Any, beta: Any, dtype: Any) -> Any:
    """TF's wrapper: max(tiny, sample / beta) in the output dtype (differentiable in beta)."""
    from tapeflow.framework.constant import convert_to_tensor
    from tapeflow.ops import math_ops

    tiny = convert_to_tensor(np.finfo(dtype._np).tiny, dtype)
    return math_ops.maximum(tiny, raw / beta)


@export("random.gamma")
def gamma(shape: Any, alpha: Any, beta: Any = None, dtype: Any = _dtypes.float32,
          seed: int | None = None, name: str | None = None):
    """Gamma(alpha, rate beta) samples of shape `shape` + broadcast(alpha, beta).shape. With a
    global or op seed these are TF 2.21's numbers (Marsaglia-Tsang on TF's Philox stream);
    without, fresh NumPy draws. Differentiable in alpha (implicit reparameterization) and
    beta, as TF."""
    from tapeflow.framework.constant import convert_to_tensor

    dtype = _float_dtype(dtype, "tf.random.gamma")
    a = convert_to_tensor(alpha, dtype)
    b = convert_to_tensor(1.0 if beta is None else beta, dtype)
    a = _broadcast_alpha(a, b)
    dims = tuple(int(d) for d in np.asarray(_value(shape)).reshape(-1))
    stream = None
    if a.shape.is_fully_defined():
        stream = _kernel_stream("gamma", dims + tuple(a.shape), dtype, seed)
    if stream is None:
        raw = apply(_gamma, a, shape=dims, dtype=dtype, gen=make_generator(seed))
    else:
        raw = apply(_tf_gamma, a, stream=stream, shape=dims, dtype=dtype)
    return _gamma_finish(raw, b, dtype)


@op("RandomPoisson", random=True, shape=lambda lam, *, shape, dtype, gen: (
    None if lam[0] is None else tuple(shape) + tuple(lam[0]), dtype))
def _poisson(lam, *, shape, dtype, gen):
    return gen.poisson(lam.astype(np.float64), size=tuple(shape) + lam.shape).astype(dtype._np)


def _highest(dtype: Any) -> float:
    np_dtype = dtype._np
    return float(np.iinfo(np_dtype).max if np.issubdtype(np_dtype, np.integer)
                 else np.finfo(np_dtype).max)


@op("TFRandomPoisson", random=True, shape=lambda lam, *, stream, shape, dtype: (
    None if lam[0] is None else tuple(shape) + tuple(lam[0]), dtype))
def _tf_poisson(lam, *, stream, shape, dtype):
    """TF's RandomPoissonV2 kernel (ops/philox_distributions.py)."""
    from tapeflow.ops import philox_distributions

    samples = philox_distributions.poisson(lam, int(np.prod(shape)), stream.key,
                                           stream.counter(), _highest(dtype))
    return samples.reshape(tuple(shape) + lam.shape).astype(dtype._np)


@export("random.poisson")
def poisson(shape: Any, lam: Any, dtype: Any = _dtypes.float32, seed: int | None = None,
            name: str | None = None):
    """Poisson(lam) samples of shape `shape` + lam.shape: TF 2.21's numbers with a seed
    (Knuth below rate 10, Hormann's rejection above, on TF's Philox stream), NumPy's
    without."""
    from tapeflow.framework.constant import convert_to_tensor

    lam_t = convert_to_tensor(lam, _dtypes.float32 if not hasattr(lam, "dtype") else None)
    dims = tuple(int(d) for d in np.asarray(_value(shape)).reshape(-1))
    dtype = _dtypes.as_dtype(dtype)
    stream = None
    if lam_t.shape.is_fully_defined():
        stream = _kernel_stream("poisson", dims + tuple(lam_t.shape), dtype, seed)
    if stream is None:
        return apply(_poisson, lam_t, shape=dims, dtype=dtype, gen=make_generator(seed))
    return apply(_tf_poisson, lam_t, stream=stream, shape=dims, dtype=dtype)
