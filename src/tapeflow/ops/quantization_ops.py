"""``tf.quantization``: fake quantization (quantization-aware training) and quantize-then-
dequantize, with TensorFlow's nudged ranges, float32 arithmetic and straight-through gradients.

Fake quantization snaps values to the ``2**num_bits`` levels of [min, max] after *nudging* the
range so that 0.0 is exactly one level (TF's rule, so a zero padding stays exactly zero); values
outside the nudged range clip. The gradient passes through inside the range and is zero
outside; with variable ranges, what fell below (above) the range flows to min (max).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops.array_ops import _tensor


def _check_bits(num_bits: int, who: str) -> None:
    if not 2 <= int(num_bits) <= 16:
        raise errors.InvalidArgumentError(
            None, who, f"{who}: num_bits must be between 2 and 16 inclusive, got {num_bits}")


def _nudged(lo: np.ndarray, hi: np.ndarray, num_bits: int, narrow_range: bool, who: str):
    """(nudged_min, nudged_max, scale, inverse scale) as float32 arrays shaped like `lo`: the
    range moved so that zero is one of the levels (TF's Nudge; the inverse is computed from
    the range, not as 1 / scale, as TF does)."""
    lo, hi = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    if np.any(lo > hi):
        raise errors.InvalidArgumentError(
            None, who, f"{who}: min has to be smaller or equal to max, got min {lo.tolist()} "
            f"and max {hi.tolist()}")
    q_min = np.float32(1 if narrow_range else 0)
    q_max = np.float32((1 << int(num_bits)) - 1)
    scale = (hi - lo) / (q_max - q_min)
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = (q_max - q_min) / (hi - lo)
        zero_from_min = q_min - lo / scale
    zero = np.where(zero_from_min < q_min, q_min,
                    np.where(zero_from_min > q_max, q_max, np.floor(zero_from_min + 0.5)))
    zero = np.where(np.isfinite(zero), zero, q_min).astype(np.float32)
    return ((q_min - zero) * scale).astype(np.float32), ((q_max - zero) * scale).astype(
        np.float32), scale.astype(np.float32), np.asarray(inverse, np.float32)


def _fake_quant(x: np.ndarray, lo: Any, hi: Any, num_bits: int, narrow_range: bool,
                who: str) -> np.ndarray:
    nudged_min, nudged_max, scale, inverse = _nudged(lo, hi, num_bits, narrow_range, who)
    x = np.asarray(x, np.float32)
    shifted = np.minimum(np.maximum(x, nudged_min), nudged_max) - nudged_min
    with np.errstate(invalid="ignore"):
        levels = np.floor(shifted * inverse + np.float32(0.5))
    out = levels * scale + nudged_min
    return np.where(scale > 0, out, nudged_min).astype(np.float32)  # a zero-width range


def _inside(x: np.ndarray, lo: Any, hi: Any, num_bits: int, narrow_range: bool, who: str):
    nudged_min, nudged_max, _, _ = _nudged(lo, hi, num_bits, narrow_range, who)
    return x < nudged_min, x > nudged_max


def _same_shape(x, *_, **__):
    return x[0], _dtypes.float32


# --- fixed range (attributes) ------------------------------------------------------------------


@op("FakeQuantWithMinMaxArgs", shape=_same_shape, output="fresh")
def _fq_args(x, *, min, max, num_bits, narrow_range):  # noqa: A002
    return _fake_quant(x, min, max, num_bits, narrow_range, "FakeQuantWithMinMaxArgs")


@op("FakeQuantWithMinMaxArgsGradient", shape=lambda g, x, **_: (x[0], _dtypes.float32),
    output="fresh")
def _fq_args_grad(g, x, *, min, max, num_bits, narrow_range):  # noqa: A002
    below, above = _inside(x, min, max, num_bits, narrow_range,
                           "FakeQuantWithMinMaxArgsGradient")
    return np.where(below | above, np.float32(0), g).astype(np.float32)


@_fq_args.def_grad
def _(g, out, x, *, min, max, num_bits, narrow_range):  # noqa: A002
    return apply(_fq_args_grad, g, x, min=min, max=max, num_bits=num_bits,
                 narrow_range=narrow_range)


@_fq_args_grad.def_grad
def _(gg, out, g, x, *, min, max, num_bits, narrow_range):  # noqa: A002
    return apply(_fq_args_grad, gg, x, min=min, max=max, num_bits=num_bits,
                 narrow_range=narrow_range), None


def _float_input(x: Any, who: str) -> Any:
    x = _tensor(x, _dtypes.float32)
    if x.dtype != _dtypes.float32:
        raise TypeError(f"{who}: inputs must be float32, got {x.dtype.name} {x.shape}")
    return x


@export("quantization.fake_quant_with_min_max_args")
def fake_quant_with_min_max_args(inputs: Any, min: float = -6.0, max: float = 6.0,  # noqa: A002
                                 num_bits: int = 8, narrow_range: bool = False,
                                 name: str | None = None) -> Any:
    """float32 `inputs` snapped to the 2**num_bits levels of the nudged [min, max]."""
    who = "FakeQuantWithMinMaxArgs"
    _check_bits(num_bits, who)
    if not float(min) < float(max):
        raise errors.InvalidArgumentError(None, who, f"{who}: min has to be smaller than max, "
                                          f"was: {min} >= {max}")
    return apply(_fq_args, _float_input(inputs, who), min=float(min), max=float(max),
                 num_bits=int(num_bits), narrow_range=bool(narrow_range))


@export("quantization.fake_quant_with_min_max_args_gradient")
def fake_quant_with_min_max_args_gradient(gradients: Any, inputs: Any, min: float = -6.0,  # noqa: A002
                                          max: float = 6.0, num_bits: int = 8,  # noqa: A002
                                          narrow_range: bool = False,
                                          name: str | None = None) -> Any:
    """`gradients` where `inputs` lie inside the nudged range, 0 elsewhere."""
    who = "FakeQuantWithMinMaxArgsGradient"
    _check_bits(num_bits, who)
    return apply(_fq_args_grad, _float_input(gradients, who), _float_input(inputs, who),
                 min=float(min), max=float(max), num_bits=int(num_bits),
                 narrow_range=bool(narrow_range))


# --- variable range (tensors; per tensor or per last-axis channel) ------------------------------


def _vars_rule(x, lo, hi, **_):
    return x[0], _dtypes.float32


@op("FakeQuantWithMinMaxVars", shape=_vars_rule, output="fresh")
def _fq_vars(x, lo, hi, *, num_bits, narrow_range):
    return _fake_quant(x, lo, hi, num_bits, narrow_range, "FakeQuantWithMinMaxVars")


@op("FakeQuantWithMinMaxVarsGradient", multi_output=True,
    shape=lambda g, x, lo, hi, **_: [(x[0], _dtypes.float32), (lo[0], _dtypes.float32),
                                     (hi[0], _dtypes.float32)])
def _fq_vars_grad(g, x, lo, hi, *, num_bits, narrow_range):
    """(input, min, max) gradients; min/max shaped [] or [channels] (the last axis)."""
    below, above = _inside(x, lo, hi, num_bits, narrow_range, "FakeQuantWithMinMaxVarsGradient")
    g = np.asarray(g, np.float32)
    axes = tuple(range(g.ndim - np.ndim(lo)))  # everything but the channel axis
    d_lo = np.sum(np.where(below, g, 0), axis=axes, dtype=np.float32)
    d_hi = np.sum(np.where(above, g, 0), axis=axes, dtype=np.float32)
    return (np.where(below | above, np.float32(0), g).astype(np.float32),
            np.asarray(d_lo, np.float32).reshape(np.shape(lo)),
            np.asarray(d_hi, np.float32).reshape(np.shape(hi)))


@_fq_vars.def_grad
def _(g, out, x, lo, hi, *, num_bits, narrow_range):
    return tuple(apply(_fq_vars_grad, g, x, lo, hi, num_bits=num_bits,
                       narrow_range=narrow_range))


def _vars(inputs: Any, min: Any, max: Any, num_bits: int, narrow_range: bool,  # noqa: A002
          who: str, per_channel: bool) -> tuple:
    _check_bits(num_bits, who)
    x = _float_input(inputs, who)
    lo, hi = _float_input(min, who), _float_input(max, who)
    rank = 1 if per_channel else 0
    channels = x.shape[-1] if x.shape.rank else None
    for name, t in (("min", lo), ("max", hi)):
        if t.shape.rank != rank or (per_channel and None not in (channels, t.shape[0])
                                    and t.shape[0] != channels):
            want = f"[{channels}] (the last dim of inputs)" if per_channel else "a scalar"
            raise errors.InvalidArgumentError(
                None, who, f"{who}: {name} must be {want}, got shape {t.shape} for inputs of "
                f"shape {x.shape}")
    return x, lo, hi


@export("quantization.fake_quant_with_min_max_vars")
def fake_quant_with_min_max_vars(inputs: Any, min: Any, max: Any, num_bits: int = 8,  # noqa: A002
                                 narrow_range: bool = False, name: str | None = None) -> Any:
    """Fake quantization to a range held in scalar tensors (trainable: what clips below or
    above the range sends its gradient to min or max)."""
    x, lo, hi = _vars(inputs, min, max, num_bits, narrow_range, "FakeQuantWithMinMaxVars", False)
    return apply(_fq_vars, x, lo, hi, num_bits=int(num_bits), narrow_range=bool(narrow_range))


@export("quantization.fake_quant_with_min_max_vars_per_channel")
def fake_quant_with_min_max_vars_per_channel(inputs: Any, min: Any, max: Any,  # noqa: A002
                                             num_bits: int = 8, narrow_range: bool = False,
                                             name: str | None = None) -> Any:
    """Fake quantization with one range per channel of the last axis."""
    x, lo, hi = _vars(inputs, min, max, num_bits, narrow_range,
                      "FakeQuantWithMinMaxVarsPerChannel", True)
    return apply(_fq_vars, x, lo, hi, num_bits=int(num_bits), narrow_range=bool(narrow_range))


def _vars_gradient(gradients: Any, inputs: Any, min: Any, max: Any,  # noqa: A002
                   num_bits: int, narrow_range: bool, who: str, per_channel: bool) -> tuple:
    x, lo, hi = _vars(inputs, min, max, num_bits, narrow_range, who, per_channel)
    return tuple(apply(_fq_vars_grad, _float_input(gradients, who), x, lo, hi,
                       num_bits=int(num_bits), narrow_range=bool(narrow_range)))


@export("quantization.fake_quant_with_min_max_vars_gradient")
def fake_quant_with_min_max_vars_gradient(gradients: Any, inputs: Any, min: Any,  # noqa: A002
                                          max: Any, num_bits: int = 8,  # noqa: A002
                                          narrow_range: bool = False,
                                          name: str | None = None) -> tuple:
    """(backprops wrt inputs, wrt min, wrt max)."""
    return _vars_gradient(gradients, inputs, min, max, num_bits, narrow_range,
                          "FakeQuantWithMinMaxVarsGradient", False)


@export("quantization.fake_quant_with_min_max_vars_per_channel_gradient")
def fake_quant_with_min_max_vars_per_channel_gradient(gradients: Any, inputs: Any,
                                                      min: Any, max: Any,  # noqa: A002
                                                      num_bits: int = 8,
                                                      narrow_range: bool = False,
                                                      name: str | None = None) -> tuple:
    """(backprops wrt inputs, wrt min [channels], wrt max [channels])."""
    return _vars_gradient(gradients, inputs, min, max, num_bits, narrow_range,
                          "FakeQuantWithMinMaxVarsPerChannelGradient", True)


# --- quantize then dequantize -----------------------------------------------------------------


def _qdq_ranges(x: np.ndarray, lo: Any, hi: Any, *, signed, num_bits, range_given,
                narrow_range, axis) -> tuple:
    """(min_range, max_range, scale, 1 / scale as TF computes it) broadcastable against `x`
    (TF's QuantizeAndDequantize: the side of the range that needs the finer grid wins)."""
    moved = np.moveaxis(x, axis, -1) if axis is not None else x
    if range_given:
        lo_r, hi_r = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
        if np.any(lo_r > hi_r):
            raise errors.InvalidArgumentError(
                None, "QuantizeAndDequantizeV4", f"QuantizeAndDequantizeV4: input_min "
                f"{lo_r.tolist()} must be <= input_max {hi_r.tolist()}")
    elif axis is None:
        lo_r, hi_r = np.asarray(x.min() if x.size else 0.0), np.asarray(x.max() if x.size
                                                                         else 0.0)
    else:
        flat = moved.reshape(-1, moved.shape[-1])
        lo_r, hi_r = flat.min(axis=0), flat.max(axis=0)
    bits = int(num_bits)
    if signed:
        q_min = -(1 << (bits - 1)) + (1 if narrow_range else 0)
        q_max = (1 << (bits - 1)) - 1
    else:
        q_min, q_max = 0, (1 << bits) - 1
    big = np.finfo(np.float64).max
    with np.errstate(divide="ignore", invalid="ignore"):
        from_min = np.where(q_min * lo_r > 0, q_min / np.where(lo_r == 0, 1, lo_r), big)
        from_max = np.where(q_max * hi_r > 0, q_max / np.where(hi_r == 0, 1, hi_r), big)
    use_min = from_min < from_max
    scale = np.where(use_min, from_min, from_max)
    inverse = np.where(use_min, lo_r / (q_min or 1), hi_r / q_max)  # one level's width
    hi_r = np.where(use_min, q_max * inverse, hi_r)
    lo_r = np.where(use_min, lo_r, q_min * inverse)
    if axis is not None:  # channel values broadcast along `axis`
        shape = [1] * x.ndim
        shape[axis] = -1
        lo_r, hi_r, scale, inverse = (np.reshape(v, shape) for v in (lo_r, hi_r, scale, inverse))
    return lo_r, hi_r, scale, inverse


@op("QuantizeAndDequantizeV4", shape=lambda x, lo, hi, **_: (x[0], x[1]), output="fresh")
def _qdq(x, lo, hi, *, signed_input, num_bits, range_given, round_mode, narrow_range, axis):
    if x.size == 0:
        return x.copy()
    lo_r, hi_r, scale, inverse = _qdq_ranges(
        x.astype(np.float64), lo, hi, signed=signed_input, num_bits=num_bits,
        range_given=range_given, narrow_range=narrow_range, axis=axis)
    values = x.astype(np.float64)
    if range_given:  # a range from the data holds it already (TF clamps only a given one)
        values = np.clip(values, lo_r, hi_r)
    scaled = values * np.where(np.isfinite(scale), scale, 0.0)
    levels = np.round(scaled) if round_mode == "HALF_TO_EVEN" else np.floor(scaled + 0.5)
    return (levels * inverse).astype(x.dtype)


@op("QuantizeAndDequantizeV4Grad", shape=lambda g, x, lo, hi, **_: (x[0], x[1]),
    output="fresh")
def _qdq_grad(g, x, lo, hi, *, axis):
    lo, hi = np.asarray(lo), np.asarray(hi)
    if axis is not None and lo.ndim:
        shape = [1] * x.ndim
        shape[axis] = -1
        lo, hi = lo.reshape(shape), hi.reshape(shape)
    return np.where((x >= lo) & (x <= hi), g, 0).astype(g.dtype)


@_qdq.def_grad
def _(g, out, x, lo, hi, *, signed_input, num_bits, range_given, round_mode, narrow_range,
      axis):
    return apply(_qdq_grad, g, x, lo, hi, axis=axis), None, None


@_qdq_grad.def_grad
def _(gg, out, g, x, lo, hi, *, axis):
    return apply(_qdq_grad, gg, x, lo, hi, axis=axis), None, None, None


@op("QuantizeAndDequantizeV2", shape=lambda x, lo, hi, **_: (x[0], x[1]), output="fresh")
def _qdq_v1(x, lo, hi, **attrs):
    return _qdq.kernel(x, lo, hi, **attrs)


@_qdq_v1.def_grad
def _(g, out, x, lo, hi, **_):
    return g, None, None  # the deprecated op's gradient: straight through everywhere


def _qdq_args(input, input_min, input_max, signed_input, num_bits, range_given,  # noqa: A002
              round_mode, narrow_range, axis, who: str) -> tuple:
    x = _tensor(input)
    if not x.dtype.is_floating:
        raise TypeError(f"{who}: input must be floating, got {x.dtype.name} {x.shape}")
    if round_mode not in ("HALF_TO_EVEN", "HALF_UP"):
        raise ValueError(f"{who}: round_mode must be 'HALF_TO_EVEN' or 'HALF_UP', got "
                         f"{round_mode!r}")
    if not 1 <= int(num_bits) <= 63:
        raise ValueError(f"{who}: num_bits must be in [1, 63], got {num_bits}")
    rank = x.shape.rank
    if axis is not None:
        axis = int(axis) + (rank if int(axis) < 0 and rank is not None else 0)
        if rank is not None and not 0 <= axis < rank:
            raise ValueError(f"{who}: axis {axis} out of range for input of shape {x.shape}")
    lo, hi = _tensor(input_min, x.dtype), _tensor(input_max, x.dtype)
    return x, lo, hi, dict(signed_input=bool(signed_input), num_bits=int(num_bits),
                           range_given=bool(range_given), round_mode=round_mode,
                           narrow_range=bool(narrow_range), axis=axis)


@export("quantization.quantize_and_dequantize_v2")
def quantize_and_dequantize_v2(input: Any, input_min: Any, input_max: Any,  # noqa: A002
                               signed_input: bool = True, num_bits: int = 8,
                               range_given: bool = False, round_mode: str = "HALF_TO_EVEN",
                               name: str | None = None, narrow_range: bool = False,
                               axis: int | None = None) -> Any:
    """`input` rounded to the integer grid of num_bits and scaled back (per `axis` channel
    when given); the gradient passes where input_min <= input <= input_max."""
    x, lo, hi, attrs = _qdq_args(input, input_min, input_max, signed_input, num_bits,
                                 range_given, round_mode, narrow_range, axis,
                                 "quantize_and_dequantize_v2")
    return apply(_qdq, x, lo, hi, **attrs)


@export("quantization.quantize_and_dequantize")
def quantize_and_dequantize(input: Any, input_min: Any, input_max: Any,  # noqa: A002
                            signed_input: bool = True, num_bits: int = 8,
                            range_given: bool = False, round_mode: str = "HALF_TO_EVEN",
                            name: str | None = None, narrow_range: bool = False,
                            axis: int | None = None) -> Any:
    """The deprecated form: the same values, its gradient straight through everywhere."""
    x, lo, hi, attrs = _qdq_args(input, input_min, input_max, signed_input, num_bits,
                                 range_given, round_mode, narrow_range, axis,
                                 "quantize_and_dequantize")
    return apply(_qdq_v1, x, lo, hi, **attrs)
