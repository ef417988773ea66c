"""Learning-rate schedules (``tf.keras.optimizers.schedules``), evaluated at the step count.

Each schedule is one small op of the step, so inside a traced training step the learning rate
follows ``optimizer.iterations`` without retracing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op


def _scalar(step, *, dtype, **attrs):
    return (), dtype


def _out(value: float, dtype: _dtypes.DType) -> np.ndarray:
    return np.asarray(value, dtype=dtype._np)


@op("ExponentialDecaySchedule", shape=_scalar)
def _exponential(step, *, initial, decay_steps, decay_rate, staircase, dtype):
    p = float(step) / decay_steps
    return _out(initial * decay_rate ** (math.floor(p) if staircase else p), dtype)


@op("InverseTimeDecaySchedule", shape=_scalar)
def _inverse_time(step, *, initial, decay_steps, decay_rate, staircase, dtype):
    p = float(step) / decay_steps
    return _out(initial / (1.0 + decay_rate * (math.floor(p) if staircase else p)), dtype)


@op("PiecewiseConstantSchedule", shape=_scalar)
def _piecewise(step, *, boundaries, values, dtype):
    s = float(step)
    for boundary, value in zip(boundaries, values):
        if s <= boundary:
            return _out(value, dtype)
    return _out(values[-1], dtype)


@op("CosineDecaySchedule", shape=_scalar)
def _cosine(step, *, initial, decay_steps, alpha, warmup_target, warmup_steps, dtype):
    s = float(step)
    if warmup_target is not None and s < warmup_steps:
        return _out(initial + (warmup_target - initial) * s / warmup_steps, dtype)
    start = initial if warmup_target is None else warmup_target
    s = min(s - warmup_steps, decay_steps)
    cosine = 0.5 * (1.0 + math.cos(math.pi * s / decay_steps))
    return _out(start * ((1.0 - alpha) * cosine + alpha), dtype)


@op("CosineDecayRestartsSchedule", shape=_scalar)
def _cosine_restarts(step, *, initial, first_decay_steps, t_mul, m_mul, alpha, dtype):
    fraction = float(step) / first_decay_steps
    if t_mul == 1.0:
        restart = math.floor(fraction)
        fraction -= restart
    else:  # period i lasts first_decay_steps * t_mul ** i steps
        restart = math.floor(math.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
        done = (1.0 - t_mul ** restart) / (1.0 - t_mul)
        fraction = (fraction - done) / t_mul ** restart
    cosine = 0.5 * m_mul ** restart * (1.0 + math.cos(math.pi * fraction))
    return _out(initial * ((1.0 - alpha) * cosine + alpha), dtype)


@op("PolynomialDecaySchedule", shape=_scalar)
def _polynomial(step, *, initial, decay_steps, end, power, cycle, dtype):
    s = float(step)
    steps = decay_steps
    if cycle:
        steps = decay_steps * max(1.0, math.ceil(s / decay_steps))
    else:
        s = min(s, decay_steps)
    return _out((initial - end) * (1.0 - s / steps) ** power + end, dtype)


class LearningRateSchedule:
    """Base class: ``schedule(step)`` returns the learning rate for that step."""

    def __call__(self, step: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement get_config")

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LearningRateSchedule:
        return cls(**config)


def _positive(name: str, value: Any) -> float:
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return float(value)


class _StepDecay(LearningRateSchedule):
    """Shared shape of the decays parameterised by (initial rate, decay_steps, decay_rate)."""

    _op: Any = None

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False, name: str | None = None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive(f"{type(self).__name__}: decay_steps", decay_steps)
        self.decay_rate = float(decay_rate)
        self.staircase = bool(staircase)
        self.name = name

    def __call__(self, step: Any) -> Any:
        return apply(type(self)._op, step, initial=self.initial_learning_rate,
                     decay_steps=self.decay_steps, decay_rate=self.decay_rate,
                     staircase=self.staircase, dtype=_dtypes.float32)

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_StepDecay):
    """initial_learning_rate * decay_rate ** (step / decay_steps) (floored if staircase)."""

    _op = _exponential


class InverseTimeDecay(_StepDecay):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps)."""

    _op = _inverse_time


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[i] while boundaries[i-1] < step <= boundaries[i]; values[-1] after the last."""

    def __init__(self, boundaries: list, values: list, name: str | None = None):
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"PiecewiseConstantDecay: the length of boundaries should be 1 less "
                             f"than the length of values, got {len(boundaries)} boundaries and "
                             f"{len(values)} values")
        self.boundaries = [float(b) for b in boundaries]
        self.values = [float(v) for v in values]
        self.name = name

    def __call__(self, step: Any) -> Any:
        return apply(_piecewise, step, boundaries=tuple(self.boundaries),
                     values=tuple(self.values), dtype=_dtypes.float32)

    def get_config(self) -> dict[str, Any]:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay from the initial rate to alpha * it over decay_steps, after a warmup."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
                 name: str | None = None, warmup_target: float | None = None,
                 warmup_steps: int = 0):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive("CosineDecay: decay_steps", decay_steps)
        self.alpha = float(alpha)
        self.name = name
        self.warmup_target = None if warmup_target is None else float(warmup_target)
        self.warmup_steps = float(warmup_steps)

    def __call__(self, step: Any) -> Any:
        return apply(_cosine, step, initial=self.initial_learning_rate,
                     decay_steps=self.decay_steps, alpha=self.alpha,
                     warmup_target=self.warmup_target, warmup_steps=self.warmup_steps,
                     dtype=_dtypes.float32)

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """SGDR (Loshchilov & Hutter): cosine decay from the initial rate to alpha * it over
    `first_decay_steps`, then restarts; period i lasts ``first_decay_steps * t_mul ** i``
    steps and starts from ``initial * m_mul ** i``."""

    def __init__(self, initial_learning_rate: float, first_decay_steps: int,
                 t_mul: float = 2.0, m_mul: float = 1.0, alpha: float = 0.0,
                 name: str | None = None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.first_decay_steps = _positive("CosineDecayRestarts: first_decay_steps",
                                           first_decay_steps)
        if float(t_mul) <= 0:
            raise ValueError(f"CosineDecayRestarts: t_mul must be positive, got {t_mul}")
        self._t_mul = float(t_mul)
        self._m_mul = float(m_mul)
        self.alpha = float(alpha)
        self.name = name

    def __call__(self, step: Any) -> Any:
        return apply(_cosine_restarts, step, initial=self.initial_learning_rate,
                     first_decay_steps=self.first_decay_steps, t_mul=self._t_mul,
                     m_mul=self._m_mul, alpha=self.alpha, dtype=_dtypes.float32)

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps) ** power + end, optionally cycling."""

    def __init__(self, initial_learning_rate: float, decay_steps: int,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 name: str | None = None):
        self.initial_learning_rate = float(initial_learning_rate)
        self.decay_steps = _positive("PolynomialDecay: decay_steps", decay_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.cycle = bool(cycle)
        self.name = name

    def __call__(self, step: Any) -> Any:
        return apply(_polynomial, step, initial=self.initial_learning_rate,
                     decay_steps=self.decay_steps, end=self.end_learning_rate,
                     power=self.power, cycle=self.cycle, dtype=_dtypes.float32)

    def get_config(self) -> dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


_SCHEDULES = {cls.__name__: cls for cls in (ExponentialDecay, InverseTimeDecay,
                                            PiecewiseConstantDecay, CosineDecay,
                                            CosineDecayRestarts, PolynomialDecay)}


def serialize(schedule: LearningRateSchedule) -> dict[str, Any]:
    """{'class_name': ..., 'config': ...}, as Keras."""
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Any:
    """The schedule described by `serialize`'s output."""
    classes = dict(_SCHEDULES, **(custom_objects or {}))
    name = config.get("class_name")
    if name not in classes:
        raise ValueError(f"Unknown learning rate schedule {name!r}; known: {sorted(classes)}")
    return classes[name].from_config(config["config"])
