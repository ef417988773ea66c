"""Weight initializers (``tf.keras.initializers``), Keras 2 semantics.

An initializer is a callable ``init(shape, dtype=None)`` returning a tensor. Random ones draw
from the ops library's seeded generators (``random_ops.make_generator``), so
``tf.random.set_seed`` makes a model's initial weights reproducible; as in Keras 2, an
initializer given ``seed=`` returns the same values on every call. Initial values are computed
eagerly (variables are created outside graphs), so the sampling is plain NumPy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.framework import dtypes as _dtypes
from tapeflow.ops import random_ops


def _float_dtype(dtype: Any, who: str) -> _dtypes.DType:
    dtype = _dtypes.float32 if dtype is None else _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"{who}: expected a floating dtype, got {dtype.name}")
    return dtype


def _generator(seed: int | None) -> np.random.Generator:
    """A fixed stream for an explicit seed, else the global-seed stream of tf.random."""
    return np.random.default_rng(seed) if seed is not None else random_ops.make_generator(None)


def _uniform(shape: tuple, low: float, high: float, dtype: _dtypes.DType, seed: int | None):
    values = _generator(seed).uniform(low, high, size=shape)
    return tf.constant(values.astype(dtype.as_numpy_dtype))


def _normal(shape: tuple, mean: float, std: float, dtype: _dtypes.DType, seed: int | None):
    values = _generator(seed).normal(mean, std, size=shape)
    return tf.constant(values.astype(dtype.as_numpy_dtype))


def _truncated_normal(shape: tuple, mean: float, std: float, dtype: _dtypes.DType,
                      seed: int | None):
    """Normal samples, those beyond two standard deviations redrawn (as TF's op)."""
    gen = _generator(seed)
    values = gen.standard_normal(size=shape)
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = gen.standard_normal(size=int(outside.sum()))
        outside = np.abs(values) > 2.0
    return tf.constant((mean + std * values).astype(dtype.as_numpy_dtype))


def _shape(shape: Any) -> tuple[int, ...]:
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    return tuple(int(d) for d in shape)


def compute_fans(shape: tuple[int, ...]) -> tuple[float, float]:
    """(fan_in, fan_out): Dense kernels are [in, out], conv kernels [*window, in, out]."""
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive = math.prod(shape[:-2])
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


class Initializer:
    """Base class: subclasses implement ``__call__(shape, dtype=None)``."""

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(shape, dtype)")

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros (the Keras default for biases)."""

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _dtypes.float32 if dtype is None else _dtypes.as_dtype(dtype)
        return tf.zeros(_shape(shape), dtype=dtype)


class Ones(Initializer):
    """All ones (BatchNormalization's gamma and moving variance)."""

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _dtypes.float32 if dtype is None else _dtypes.as_dtype(dtype)
        return tf.ones(_shape(shape), dtype=dtype)


class Constant(Initializer):
    """Every element set to the scalar `value`."""

    def __init__(self, value: float = 0):
        if np.ndim(value) != 0:
            raise TypeError(f"Constant initializer needs a scalar value, got shape "
                            f"{np.shape(value)}")
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _dtypes.float32 if dtype is None else _dtypes.as_dtype(dtype)
        return tf.constant(np.full(_shape(shape), self.value, dtype=dtype.as_numpy_dtype))

    def get_config(self) -> dict:
        return {"value": self.value}


class RandomNormal(Initializer):
    """Samples from N(mean, stddev^2)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _float_dtype(dtype, "RandomNormal")
        return _normal(_shape(shape), self.mean, self.stddev, dtype, self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    """Samples from U[minval, maxval)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _float_dtype(dtype, "RandomUniform")
        return _uniform(_shape(shape), self.minval, self.maxval, dtype, self.seed)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(Initializer):
    """N(mean, stddev^2) with samples beyond two standard deviations redrawn."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _float_dtype(dtype, "TruncatedNormal")
        return _truncated_normal(_shape(shape), self.mean, self.stddev, dtype, self.seed)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


# std of a unit normal truncated to [-2, 2]: dividing by it keeps the requested variance
_TRUNCATED_STD = 0.87962566103423978


class VarianceScaling(Initializer):
    """Variance scale / fan (fan_in, fan_out or their average): the Glorot/He/LeCun family."""

    _modes = ("fan_in", "fan_out", "fan_avg")
    _distributions = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal", seed: int | None = None):
        if scale <= 0.0:
            raise ValueError(f"VarianceScaling: `scale` must be positive, got {scale}")
        if distribution == "normal":
            distribution = "truncated_normal"
        if mode not in self._modes:
            raise ValueError(f"VarianceScaling: `mode` must be one of {self._modes}, got {mode!r}")
        if distribution not in self._distributions:
            raise ValueError(f"VarianceScaling: `distribution` must be one of "
                             f"{self._distributions}, got {distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _float_dtype(dtype, type(self).__name__)
        shape = _shape(shape)
        fan_in, fan_out = compute_fans(shape)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        variance = self.scale / max(1.0, fan[self.mode])
        if self.distribution == "truncated_normal":
            std = math.sqrt(variance) / _TRUNCATED_STD
            return _truncated_normal(shape, 0.0, std, dtype, self.seed)
        if self.distribution == "untruncated_normal":
            return _normal(shape, 0.0, math.sqrt(variance), dtype, self.seed)
        limit = math.sqrt(3.0 * variance)
        return _uniform(shape, -limit, limit, dtype, self.seed)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


class GlorotUniform(VarianceScaling):
    """U[-l, l] with l = sqrt(6 / (fan_in + fan_out)): the Keras default for kernels."""

    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_avg", "uniform", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class GlorotNormal(VarianceScaling):
    """Truncated normal with std sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class HeNormal(VarianceScaling):
    """Truncated normal with std sqrt(2 / fan_in): for ReLU networks."""

    def __init__(self, seed: int | None = None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class HeUniform(VarianceScaling):
    """U[-l, l] with l = sqrt(6 / fan_in)."""

    def __init__(self, seed: int | None = None):
        super().__init__(2.0, "fan_in", "uniform", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class LecunNormal(VarianceScaling):
    """Truncated normal with std sqrt(1 / fan_in): for SELU networks."""

    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class LecunUniform(VarianceScaling):
    """U[-l, l] with l = sqrt(3 / fan_in)."""

    def __init__(self, seed: int | None = None):
        super().__init__(1.0, "fan_in", "uniform", seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times `gain`: keeps recurrent kernels norm-preserving.

    Shapes of rank > 2 are flattened to [prod(shape[:-1]), shape[-1]] first, as Keras does.
    """

    def __init__(self, gain: float = 1.0, seed: int | None = None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _float_dtype(dtype, "Orthogonal")
        shape = _shape(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal initializer needs a shape of rank >= 2, got {shape}")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        flat = (max(rows, cols), min(rows, cols))
        a = _generator(self.seed).standard_normal(size=flat)
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))  # unique decomposition: a uniform draw over orthogonal matrices
        if rows < cols:
            q = q.T
        return tf.constant((self.gain * q).reshape(shape).astype(dtype.as_numpy_dtype))

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain: float = 1.0):
        self.gain = gain

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any):
        dtype = _float_dtype(dtype, "Identity")
        shape = _shape(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, got {shape}")
        return tf.constant(self.gain * np.eye(*shape, dtype=dtype.as_numpy_dtype))

    def get_config(self) -> dict:
        return {"gain": self.gain}


# Keras's lower-case aliases (``initializers.glorot_uniform()`` and ``"glorot_uniform"``)
zeros = Zeros
ones = Ones
constant = Constant
random_normal = RandomNormal
random_uniform = RandomUniform
truncated_normal = TruncatedNormal
variance_scaling = VarianceScaling
glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal
he_normal = HeNormal
he_uniform = HeUniform
lecun_normal = LecunNormal
lecun_uniform = LecunUniform
orthogonal = Orthogonal
identity = Identity

_BY_NAME: dict[str, type[Initializer]] = {
    **{cls.__name__: cls for cls in (
        Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal, VarianceScaling,
        GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform, Orthogonal,
        Identity)},
    "zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones, "constant": Constant,
    "random_normal": RandomNormal, "normal": RandomNormal, "random_uniform": RandomUniform,
    "uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform, "orthogonal": Orthogonal,
    "identity": Identity,
}


def serialize(initializer: Initializer) -> dict:
    """{"class_name", "config"}: what Keras stores in a model config."""
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config: dict) -> Initializer:
    """Inverse of `serialize`."""
    return _lookup(config["class_name"]).from_config(config.get("config", {}))


def _lookup(name: str) -> type[Initializer]:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"Unknown initializer: {name!r}. Known names: "
                         f"{sorted(k for k in _BY_NAME if k.islower())}") from None


def get(identifier: Any) -> Initializer | Any:
    """An initializer from a name, a config dict, an instance or a callable (None stays None)."""
    if identifier is None or callable(identifier) and not isinstance(identifier, type):
        return identifier
    if isinstance(identifier, str):
        return _lookup(identifier)()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    raise ValueError(f"Could not interpret initializer identifier: {identifier!r}")
