"""``tf.signal``: FFTs (with gradients), framing, windows and the short-time Fourier transform.

FFT kernels are NumPy's (pocketfft); the gradient of an FFT is the scaled inverse FFT, and the
real-input transforms take their gradients through the complex ones. ``frame`` is a gather, so
everything built from it (``stft``, ``overlap_and_add``) is differentiable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, complex_ops, gather_ops, math_ops
from tapeflow.ops.array_ops import _tensor


def _complex_of(dtype: Any) -> Any:
    return _dtypes.complex128 if dtype in (_dtypes.float64, _dtypes.complex128) else \
        _dtypes.complex64


def _fft_op(name: str, fn: Any, dims: int):
    @op(name, shape=lambda x: x)
    def kernel(x):
        axes = tuple(range(-dims, 0))
        return fn(x, axes=axes).astype(x.dtype, copy=False)

    return kernel


_fft = _fft_op("FFT", np.fft.fftn, 1)
_ifft = _fft_op("IFFT", np.fft.ifftn, 1)
_fft2 = _fft_op("FFT2D", np.fft.fftn, 2)
_ifft2 = _fft_op("IFFT2D", np.fft.ifftn, 2)
_fft3 = _fft_op("FFT3D", np.fft.fftn, 3)
_ifft3 = _fft_op("IFFT3D", np.fft.ifftn, 3)


def _size(x: Any, dims: int) -> Any:
    shape = array_ops.shape(x)
    n = math_ops.cast(shape[-1], _dtypes.float32)
    for d in range(2, dims + 1):
        n = n * math_ops.cast(shape[-d], _dtypes.float32)
    return n


def _register(forward, inverse, dims: int) -> None:
    # y = F x (unnormalized): the VJP under TF's complex convention is n * ifft(g)
    forward.def_grad(lambda g, out, x: apply(inverse, g) * math_ops.cast(_size(g, dims),
                                                                          g.dtype))
    inverse.def_grad(lambda g, out, x: apply(forward, g) / math_ops.cast(_size(g, dims),
                                                                          g.dtype))


for _f, _i, _d in [(_fft, _ifft, 1), (_fft2, _ifft2, 2), (_fft3, _ifft3, 3)]:
    _register(_f, _i, _d)


def _complex(x: Any) -> Any:
    t = _tensor(x)
    return t if t.dtype.is_complex else math_ops.cast(t, _complex_of(t.dtype))


@export("signal.fft", "fft")
def fft(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """DFT over the innermost dimension."""
    return apply(_fft, _complex(input))


@export("signal.ifft", "ifft")
def ifft(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return apply(_ifft, _complex(input))


@export("signal.fft2d", "fft2d")
def fft2d(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return apply(_fft2, _complex(input))


@export("signal.ifft2d", "ifft2d")
def ifft2d(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return apply(_ifft2, _complex(input))


@export("signal.fft3d", "fft3d")
def fft3d(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return apply(_fft3, _complex(input))


@export("signal.ifft3d", "ifft3d")
def ifft3d(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return apply(_ifft3, _complex(input))


def _fit_length(x: Any, n: int) -> Any:
    """Crop or zero-pad the innermost dim to n."""
    have = x.shape[-1]
    if have is None or have == n:
        return x
    if have > n:
        return x[..., :n]
    pad = [[0, 0]] * (x.shape.rank - 1) + [[0, n - have]]
    return array_ops.pad(x, pad)


@export("signal.rfft")
def rfft(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
    """DFT of a real signal: the fft_length // 2 + 1 non-negative frequencies."""
    x = _tensor(input_tensor)
    n = int(np.asarray(fft_length).reshape(-1)[-1]) if fft_length is not None else x.shape[-1]
    full = fft(_fit_length(x, n))
    return full[..., : n // 2 + 1]


@export("signal.irfft")
def irfft(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
    """Inverse of rfft: a real signal of fft_length samples (default 2 * (bins - 1))."""
    x = _complex(input_tensor)
    bins = x.shape[-1]
    n = int(np.asarray(fft_length).reshape(-1)[-1]) if fft_length is not None else 2 * (bins - 1)
    x = _fit_length(x, n // 2 + 1)
    mirror = complex_ops.conj(x[..., 1:(n + 1) // 2][..., ::-1])
    full = array_ops.concat([x, mirror], -1) if n % 2 else array_ops.concat(
        [x[..., : n // 2 + 1], mirror], -1)
    return complex_ops.real(ifft(full))


@export("signal.fftshift")
def fftshift(x: Any, axes: Any = None, name: str | None = None) -> Any:
    t = _tensor(x)
    axes = list(range(t.shape.rank)) if axes is None else (
        [axes] if isinstance(axes, int) else list(axes))
    return roll(t, [t.shape[a] // 2 for a in axes], axes)


@export("signal.ifftshift")
def ifftshift(x: Any, axes: Any = None, name: str | None = None) -> Any:
    t = _tensor(x)
    axes = list(range(t.shape.rank)) if axes is None else (
        [axes] if isinstance(axes, int) else list(axes))
    return roll(t, [-(t.shape[a] // 2) for a in axes], axes)


# --- frames and windows ------------------------------------------------------------------------


@export("signal.frame")
def frame(signal: Any, frame_length: int, frame_step: int, pad_end: bool = False,
          pad_value: Any = 0, axis: int = -1, name: str | None = None) -> Any:
    """Overlapping windows of `frame_length` samples, `frame_step` apart, along `axis`."""
    x = _tensor(signal)
    rank = x.shape.rank
    axis = axis % rank
    n = x.shape[axis]
    if n is None:
        raise ValueError("tf.signal.frame: the framed axis must have a static length")
    if pad_end:
        frames = -(-n // frame_step) if n else 0
        target = max((frames - 1) * frame_step + frame_length, n)
        pad = [[0, 0]] * rank
        pad[axis] = [0, target - n]
        x = array_ops.pad(x, pad, constant_values=pad_value)
        n = target
    count = max(0, 1 + (n - frame_length) // frame_step)
    index = (np.arange(count)[:, None] * frame_step + np.arange(frame_length)[None, :])
    return gather_ops.gather(x, index.astype(np.int32), axis=axis)


@export("signal.overlap_and_add")
def overlap_and_add(signal: Any, frame_step: int, name: str | None = None) -> Any:
    """Sum frames [..., frames, frame_length] placed frame_step apart (inverse of frame)."""
    from tapeflow.ops import segment_ops

    x = _tensor(signal)
    frames, length = x.shape[-2], x.shape[-1]
    out_len = (frames - 1) * frame_step + length
    index = (np.arange(frames)[:, None] * frame_step + np.arange(length)[None, :]).reshape(-1)
    lead = list(range(x.shape.rank - 2))
    moved = array_ops.transpose(x, [x.shape.rank - 2, x.shape.rank - 1] + lead)
    flat = array_ops.reshape(moved, [frames * length, -1])
    summed = segment_ops.unsorted_segment_sum(flat, index, out_len)
    shape = array_ops.concat([[out_len], array_ops.shape(x)[:-2]], 0)
    back = array_ops.reshape(summed, shape)
    return array_ops.transpose(back, list(range(1, len(lead) + 1)) + [0])


def _window(n: int, periodic: bool, dtype: Any, a: float, b: float) -> Any:
    from tapeflow.framework.constant import convert_to_tensor

    dtype = _dtypes.as_dtype(dtype)
    if n == 1:
        return convert_to_tensor(np.ones(1, dtype._np))
    denom = n if periodic else n - 1
    k = np.arange(n)
    return convert_to_tensor((a - b * np.cos(2 * np.pi * k / denom)).astype(dtype._np))


@export("signal.hann_window")
def hann_window(window_length: int, periodic: bool = True, dtype: Any = _dtypes.float32,
                name: str | None = None) -> Any:
    return _window(int(window_length), periodic, dtype, 0.5, 0.5)


@export("signal.hamming_window")
def hamming_window(window_length: int, periodic: bool = True, dtype: Any = _dtypes.float32,
                   name: str | None = None) -> Any:
    return _window(int(window_length), periodic, dtype, 0.54, 0.46)


@export("signal.stft")
def stft(signals: Any, frame_length: int, frame_step: int, fft_length: int | None = None,
         window_fn: Any = hann_window, pad_end: bool = False, name: str | None = None) -> Any:
    """Short-time Fourier transform: rfft of windowed frames [..., frames, fft_length//2+1]."""
    if fft_length is None:
        fft_length = 1 << (int(frame_length) - 1).bit_length()
    x = _tensor(signals)
    framed = frame(x, frame_length, frame_step, pad_end=pad_end)
    if window_fn is not None:
        framed = framed * window_fn(frame_length, dtype=x.dtype)
    return rfft(framed, [fft_length])


@op("Roll", shape=lambda x, *, shift, axis: x)
def _roll(x, *, shift, axis):
    return np.roll(x, shift, axis)


@_roll.def_grad
def _(g, out, x, *, shift, axis):
    return apply(_roll, g, shift=tuple(-s for s in shift), axis=axis)


@export("roll", "manip.roll")
def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Any:  # noqa: A002
    """Shift elements along `axis` (wrapping around)."""
    shift = tuple(int(s) for s in np.asarray(shift).reshape(-1))
    axis = tuple(int(a) for a in np.asarray(axis).reshape(-1))
    return apply(_roll, _tensor(input), shift=shift, axis=axis)
