"""``tf.signal.fftnd`` / ``ifftnd`` / ``rfftnd`` / ``irfftnd`` (N-D transforms over chosen axes,
NumPy's `norm` conventions as TF 2.21 applies them) and the modified DCT (``mdct``,
``inverse_mdct``: TF's framing, windowing and DCT-IV formulation).

Composed from the 1-D transforms along each axis (moved last by a transpose), cropping or
zero-padding each axis to its fft_length first, so gradients come from the existing ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.ops import array_ops, math_ops, signal_extras, signal_ops
from tapeflow.ops.array_ops import _tensor


def _along(x: Any, axis: int, fn: Any) -> Any:
    """fn (a transform of the last dim) applied along `axis`."""
    rank = x.shape.rank
    if axis == rank - 1:
        return fn(x)
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return array_ops.transpose(fn(array_ops.transpose(x, perm)), perm)


def _fit_axis(x: Any, axis: int, n: int) -> Any:
    have = x.shape[axis]
    if have == n:
        return x
    if have > n:
        return array_ops.split(x, [n, have - n], axis=axis)[0]
    pad = [[0, 0]] * x.shape.rank
    pad[axis] = [0, n - have]
    return array_ops.pad(x, pad)


def _axes_and_lengths(x: Any, fft_length: Any, axes: Any, inverse_real: bool = False) -> tuple:
    rank = x.shape.rank
    if axes is None:
        n = rank if fft_length is None else len(np.asarray(fft_length).reshape(-1))
        axes = list(range(rank - n, rank))
    axes = [int(a) % rank for a in np.asarray(axes).reshape(-1)]
    if fft_length is None:
        lengths = [int(x.shape[a]) for a in axes]
        if inverse_real:
            lengths[-1] = 2 * (lengths[-1] - 1)
    else:
        lengths = [int(n) for n in np.asarray(fft_length).reshape(-1)]
    if len(lengths) != len(axes):
        raise ValueError(f"fft_length {lengths} and axes {axes} must have the same length")
    return axes, lengths


def _norm_scale(norm: str | None, lengths: list, inverse: bool) -> float:
    n = float(np.prod(lengths))
    norm = norm or "backward"
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f"norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    if norm == "backward":
        return 1.0
    if norm == "ortho":
        return np.sqrt(n) if inverse else 1.0 / np.sqrt(n)
    return n if inverse else 1.0 / n


def _scaled(x: Any, scale: float) -> Any:
    return x if scale == 1.0 else x * math_ops.cast(scale, x.dtype)


@export("signal.fftnd", "fftnd")
def fftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None, norm: str | None = None,
          name: str | None = None) -> Any:
    """The N-D DFT over `axes` (default: the last len(fft_length) axes, or all)."""
    x = signal_ops._complex(input_tensor)
    axes, lengths = _axes_and_lengths(x, fft_length, axes)
    for axis, n in zip(axes, lengths):
        x = _along(_fit_axis(x, axis, n), axis, signal_ops.fft)
    return _scaled(x, _norm_scale(norm, lengths, False))


@export("signal.ifftnd", "ifftnd")
def ifftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None, norm: str | None = None,
           name: str | None = None) -> Any:
    """The N-D inverse DFT over `axes`."""
    x = signal_ops._complex(input_tensor)
    axes, lengths = _axes_and_lengths(x, fft_length, axes)
    for axis, n in zip(axes, lengths):
        x = _along(_fit_axis(x, axis, n), axis, signal_ops.ifft)
    return _scaled(x, _norm_scale(norm, lengths, True))


@export("signal.rfftnd", "rfftnd")
def rfftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None, norm: str | None = None,
           name: str | None = None) -> Any:
    """The N-D DFT of a real signal: the last axis keeps its n // 2 + 1 non-negative bins."""
    x = _tensor(input_tensor)
    axes, lengths = _axes_and_lengths(x, fft_length, axes)
    last, n_last = axes[-1], lengths[-1]
    x = _along(_fit_axis(x, last, n_last), last, lambda t: signal_ops.rfft(t, [n_last]))
    for axis, n in zip(axes[:-1], lengths[:-1]):
        x = _along(_fit_axis(x, axis, n), axis, signal_ops.fft)
    return _scaled(x, _norm_scale(norm, lengths, False))


@export("signal.irfftnd", "irfftnd")
def irfftnd(input_tensor: Any, fft_length: Any = None, axes: Any = None,
            norm: str | None = None, name: str | None = None) -> Any:
    """Inverse of rfftnd: a real signal of fft_length (last: default 2 * (bins - 1))."""
    x = signal_ops._complex(input_tensor)
    axes, lengths = _axes_and_lengths(x, fft_length, axes, inverse_real=True)
    for axis, n in zip(axes[:-1], lengths[:-1]):
        x = _along(_fit_axis(x, axis, n), axis, signal_ops.ifft)
    last, n_last = axes[-1], lengths[-1]
    x = _along(x, last, lambda t: signal_ops.irfft(t, [n_last]))
    return _scaled(x, _norm_scale(norm, lengths, True))


def _window(window_fn: Any, length: int, dtype: Any) -> Any:
    return None if window_fn is None else window_fn(length, dtype=dtype)


@export("signal.mdct")
def mdct(signals: Any, frame_length: int, window_fn: Any = signal_extras.vorbis_window,
         pad_end: bool = False, norm: str | None = None, name: str | None = None) -> Any:
    """Modified DCT of frames frame_length long, half a frame apart: frame_length // 2
    coefficients each (TF's formulation: fold the windowed frame, then a DCT-IV)."""
    x = _tensor(signals)
    frame_length = int(frame_length)
    if frame_length % 4:
        raise ValueError("The frame length must be a multiple of 4.")
    frames = signal_ops.frame(x, frame_length, frame_length // 2, pad_end=pad_end)
    window = _window(window_fn, frame_length, frames.dtype)
    frames = frames * window if window is not None else frames * (1.0 / np.sqrt(2))
    a, b, c, d = array_ops.split(frames, 4, axis=-1)
    folded = array_ops.concat([-array_ops.reverse(c, [-1]) - d,
                               a - array_ops.reverse(b, [-1])], axis=-1)
    return signal_extras.dct(folded, type=4, norm=norm)


@export("signal.inverse_mdct")
def inverse_mdct(mdcts: Any, window_fn: Any = signal_extras.vorbis_window,
                 norm: str | None = None, name: str | None = None) -> Any:
    """Signals back from mdct coefficients (windowed unfold, then overlap-add)."""
    x = _tensor(mdcts)
    half = int(x.shape[-1])
    if norm is None:
        y = signal_extras.dct(x, type=4) * math_ops.cast(0.5 / half, x.dtype)
    elif norm == "ortho":
        y = signal_extras.dct(x, type=4, norm="ortho")
    else:
        raise ValueError(f"norm must be None or 'ortho', got {norm!r}")
    first, second = array_ops.split(y, 2, axis=-1)
    frames = array_ops.concat([second, -array_ops.reverse(second, [-1]),
                               -array_ops.reverse(first, [-1]), -first], axis=-1)
    window = _window(window_fn, 2 * half, x.dtype)
    frames = frames * window if window is not None else frames * (1.0 / np.sqrt(2))
    return signal_ops.overlap_and_add(frames, half)

