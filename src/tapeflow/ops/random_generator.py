"""``tf.random.Generator``: a Philox stream whose state is a variable, as in TensorFlow.

The state is an int64 variable [counter_lo, counter_hi, key]. Each draw reads it, fills the
output from the Philox stream at (key, counter) and advances the counter by 256 per output
value (TensorFlow's reservation), so ``Generator.from_seed(s)`` gives TensorFlow 2.21's numbers
call after call. Inside ``tf.function`` the read-draw-advance is one stateful op followed by
the state's assignment, so every call of the traced function draws new numbers.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import config as _config
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.variable import Variable
from tapeflow.ops import philox
from tapeflow.ops.shape_args import _filled_rule, run_time_shape, shape_operands
from tapeflow.ops.stateless_random import draw

PHILOX = 1
_RESERVED_PER_OUTPUT = 256


@export("random.Algorithm", "random.experimental.Algorithm")
class Algorithm:
    """Random algorithms by their TensorFlow ids (only Philox runs on CPU here)."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


def _as_alg(alg: Any) -> int:
    if alg is None:
        return PHILOX
    name = getattr(alg, "name", alg)
    if isinstance(name, str):
        name = {"philox": 1, "threefry": 2, "auto_select": 3}.get(name.lower(), name)
    if name in (1, 3):
        return PHILOX
    raise NotImplementedError(f"random algorithm {alg!r}: only Philox (and auto_select, which "
                              f"is Philox on CPU) is implemented")


def _u64(x: int) -> int:
    return int(x) & philox.MASK64


def _to_i64(x: int) -> int:
    x = _u64(x)
    return x - (1 << 64) if x >= 1 << 63 else x


@export("random.create_rng_state", "random.experimental.create_rng_state")
def create_rng_state(seed: int, alg: Any) -> np.ndarray:
    """The state TensorFlow makes from an integer seed: its 64-bit chunks, zero-padded."""
    _as_alg(alg)
    chunks = []
    seed = int(seed)
    for _ in range(3):
        chunks.append(_to_i64(seed & philox.MASK64))
        seed >>= 64
    return np.asarray(chunks, np.int64)


def _state_spec(state, *dims, shape, kind, dtype, lo, hi):
    return [_filled_rule(*dims, shape=shape, dtype=dtype), ((3,), _dtypes.int64)]


@op("StatefulPhiloxDraw", multi_output=True, stateful=True, shape=_state_spec)
def _draw(state, *dims, shape, kind, dtype, lo, hi):
    """(samples, next state) from the state vector [counter_lo, counter_hi, key]."""
    size_shape = run_time_shape(dims, shape)
    s = [_u64(v) for v in state.tolist()]
    key = (s[2] & 0xFFFFFFFF, s[2] >> 32)
    out = draw(key, (s[0], s[1]), size_shape, kind, dtype, lo, hi)
    advance = s[0] + _RESERVED_PER_OUTPUT * int(np.prod(size_shape))
    new = [_to_i64(advance), _to_i64(s[1] + (advance >> 64)), _to_i64(s[2])]
    return out, np.asarray(new, np.int64)


@export("random.Generator", "random.experimental.Generator")
class Generator:
    """A random stream with its state in a variable (``tf.random.Generator``)."""

    def __init__(self, copy_from: Generator | None = None, state: Any = None, alg: Any = None):
        if copy_from is not None:
            state, alg = copy_from.state.numpy(), copy_from.algorithm
        if state is None:
            raise ValueError("tf.random.Generator needs copy_from or state (or use from_seed)")
        self._alg = _as_alg(alg)
        self._state_var = Variable(np.asarray(state, np.int64).reshape(3), trainable=False,
                                   name="StateVar")

    # --- constructors ---------------------------------------------------------------------
    @classmethod
    def from_seed(cls, seed: int, alg: Any = None) -> Generator:
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_state(cls, state: Any, alg: Any) -> Generator:
        return cls(state=state, alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg: Any = None) -> Generator:
        if _config.op_determinism_enabled():
            raise RuntimeError('"from_non_deterministic_state" cannot be called when '
                               'determinism is enabled.')
        seed = int.from_bytes(os.urandom(16), "little")
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_key_counter(cls, key: Any, counter: Any, alg: Any) -> Generator:
        counter = [int(c) for c in np.asarray(counter).reshape(-1)]
        return cls(state=counter + [int(np.asarray(key).reshape(-1)[0])], alg=alg)

    # --- state ----------------------------------------------------------------------------
    @property
    def state(self) -> Variable:
        return self._state_var

    @property
    def algorithm(self) -> int:
        return self._alg

    @property
    def key(self) -> Any:
        return self._state_var[2]

    def reset(self, state: Any) -> None:
        self._state_var.assign(np.asarray(state, np.int64).reshape(3))

    def reset_from_seed(self, seed: int) -> None:
        self.reset(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key: Any, counter: Any) -> None:
        counter = [int(c) for c in np.asarray(counter).reshape(-1)]
        self.reset(counter + [int(np.asarray(key).reshape(-1)[0])])

    def skip(self, delta: int) -> None:
        """Advance the counter as `delta` draws of one value each would."""
        s = [_u64(v) for v in self._state_var.numpy().tolist()]
        advance = s[0] + _RESERVED_PER_OUTPUT * int(delta)
        self.reset([_to_i64(advance), _to_i64(s[1] + (advance >> 64)), _to_i64(s[2])])

    # --- draws ------------------------------------------------------------------------------
    def _draw(self, kind: str, shape: Any, dtype: Any, lo: Any = None, hi: Any = None) -> Any:
        dims, static = shape_operands(shape, f"Generator.{kind}")
        out, new_state = apply(_draw, self._state_var, *dims, shape=static, kind=kind,
                               dtype=_dtypes.as_dtype(dtype), lo=lo, hi=hi)
        self._state_var.assign(new_state)
        return out

    def normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
               dtype: Any = _dtypes.float32, name: str | None = None) -> Any:
        return _scaled(self._draw("normal", shape, dtype), mean, stddev)

    def truncated_normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
                         dtype: Any = _dtypes.float32, name: str | None = None) -> Any:
        return _scaled(self._draw("truncated_normal", shape, dtype), mean, stddev)

    def uniform(self, shape: Any, minval: Any = 0, maxval: Any = None,
                dtype: Any = _dtypes.float32, name: str | None = None) -> Any:
        from tapeflow.framework.constant import convert_to_tensor

        dtype = _dtypes.as_dtype(dtype)
        if dtype.is_integer:
            if minval is None and maxval is None:
                return self.uniform_full_int(shape, dtype)
            if maxval is None:
                raise ValueError("Generator.uniform: maxval must be given for integer dtypes")
            return self._draw("int", shape, dtype, int(_value(minval)), int(_value(maxval)))
        rnd = self._draw("uniform", shape, dtype)
        lo = convert_to_tensor(0 if minval is None else minval, dtype)
        hi = convert_to_tensor(1 if maxval is None else maxval, dtype)
        return rnd * (hi - lo) + lo

    def uniform_full_int(self, shape: Any, dtype: Any = _dtypes.uint64,
                         name: str | None = None) -> Any:
        return self._draw("full_int", shape, dtype)

    def binomial(self, shape: Any, counts: Any, probs: Any, dtype: Any = _dtypes.int32,
                 name: str | None = None) -> Any:
        """Binomial draws (seeded from this stream; TF's own transform is not reproduced)."""
        from tapeflow.ops.stateless_random import stateless_binomial

        return stateless_binomial(shape, self.make_seeds(1)[:, 0], counts, probs, dtype)

    def make_seeds(self, count: int = 1) -> Any:
        """[2, count] seeds for stateless ops, as TensorFlow makes them."""
        from tapeflow.ops.array_ops import stack, zeros_like

        keys = self.uniform_full_int([count], _dtypes.int64)
        return stack([keys, zeros_like(keys)])

    def split(self, count: int = 1) -> list:
        """`count` new independent generators (and this one advanced)."""
        keys = self.uniform_full_int([count], _dtypes.int64).numpy()
        return [Generator(state=[0, 0, int(k)], alg=self._alg) for k in keys]


def _value(v: Any) -> Any:
    return v.numpy() if hasattr(v, "numpy") else v


def _scaled(rnd: Any, mean: Any, stddev: Any) -> Any:
    from tapeflow.framework.constant import convert_to_tensor

    return rnd * convert_to_tensor(stddev, rnd.dtype) + convert_to_tensor(mean, rnd.dtype)


_global: dict = {"generator": None}


@export("random.get_global_generator", "random.experimental.get_global_generator")
def get_global_generator() -> Generator:
    """The process-wide generator (from non-deterministic state unless set)."""
    if _global["generator"] is None:
        _global["generator"] = Generator.from_non_deterministic_state()
    return _global["generator"]


@export("random.set_global_generator", "random.experimental.set_global_generator")
def set_global_generator(generator: Generator) -> None:
    _global["generator"] = generator
