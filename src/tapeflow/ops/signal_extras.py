"""More of ``tf.signal``: 2-D/3-D real FFTs, the DCT, inverse STFT, Kaiser / Kaiser-Bessel-derived
/ Vorbis windows, mel filter banks and MFCCs, following TensorFlow's definitions (its formulas,
its default arguments), composed from existing differentiable ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.ops import array_ops, gather_ops, math_ops, reduce_ops, signal_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.linalg_ops import matmul
from tapeflow.ops.special_functions import bessel_i0e


def _swap_last_two(x: Any) -> Any:
    rank = x.shape.rank
    return array_ops.transpose(x, list(range(rank - 2)) + [rank - 1, rank - 2])


def _lengths(x: Any, fft_length: Any, dims: int) -> list:
    if fft_length is None:
        return [int(d) for d in x.shape.as_list()[-dims:]]
    return [int(n) for n in np.asarray(fft_length).reshape(-1)]


def _fit(x: Any, sizes: list) -> Any:
    """Crop or zero-pad the innermost len(sizes) dims to `sizes`."""
    rank = x.shape.rank
    for k, n in enumerate(sizes):
        axis = rank - len(sizes) + k
        have = x.shape[axis]
        if have > n:
            x = gather_ops.gather(x, np.arange(n, dtype=np.int32), axis=axis)
        elif have < n:
            pad = [[0, 0]] * rank
            pad[axis] = [0, n - have]
            x = array_ops.pad(x, pad)
    return x


@export("signal.rfft2d")
def rfft2d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
    """2-D DFT of a real signal over the innermost two dims (last: the non-negative half)."""
    x = _tensor(input_tensor)
    h, w = _lengths(x, fft_length, 2)
    return signal_ops.fft2d(_fit(x, [h, w]))[..., : w // 2 + 1]


@export("signal.rfft3d")
def rfft3d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
    """3-D DFT of a real signal over the innermost three dims."""
    x = _tensor(input_tensor)
    d, h, w = _lengths(x, fft_length, 3)
    return signal_ops.fft3d(_fit(x, [d, h, w]))[..., : w // 2 + 1]


def _ifft_along(x: Any, axis_from_end: int) -> Any:
    """1-D inverse DFT along the dim `axis_from_end` places before the last."""
    rank = x.shape.rank
    axis = rank - 1 - axis_from_end
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return array_ops.transpose(signal_ops.ifft(array_ops.transpose(x, perm)), perm)


@export("signal.irfft2d")
def irfft2d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
    """Inverse of rfft2d: a real signal of fft_length (default [h, 2 * (bins - 1)])."""
    x = signal_ops._complex(input_tensor)
    if fft_length is None:
        fft_length = [x.shape[-2], 2 * (x.shape[-1] - 1)]
    h, w = _lengths(x, fft_length, 2)
    x = _fit(x, [h, x.shape[-1]])
    return signal_ops.irfft(_ifft_along(x, 1), [w])


@export("signal.irfft3d")
def irfft3d(input_tensor: Any, fft_length: Any = None, name: str | None = None) -> Any:
    """Inverse of rfft3d."""
    x = signal_ops._complex(input_tensor)
    if fft_length is None:
        fft_length = [x.shape[-3], x.shape[-2], 2 * (x.shape[-1] - 1)]
    d, h, w = _lengths(x, fft_length, 3)
    x = _fit(x, [d, h, x.shape[-1]])
    return signal_ops.irfft(_ifft_along(_ifft_along(x, 1), 2), [w])


def _dct_matrix(n: int, kind: int, norm: str | None) -> np.ndarray:
    """M with dct(x) = x @ M for DCT type `kind` of length n (SciPy's/TensorFlow's scaling)."""
    from scipy import fft as sp_fft

    return sp_fft.dct(np.eye(n), type=kind, norm=norm, axis=-1)


@export("signal.dct")
def dct(input: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None, name: str | None = None) -> Any:
    """Discrete cosine transform of types 1-4 over the last axis (scipy.fft.dct's definition,
    as TensorFlow's); linear, so its gradient is the transposed transform."""
    if axis != -1:
        raise NotImplementedError("tf.signal.dct: only axis=-1 is supported (as TensorFlow)")
    if norm not in (None, "ortho"):
        raise ValueError(f"tf.signal.dct: norm must be None or 'ortho', got {norm!r}")
    if type == 1 and norm == "ortho":
        raise ValueError("Normalization is not supported for the Type-I DCT.")
    x = _tensor(input)
    if n is not None:
        x = _fit(x, [int(n)])
    length = x.shape[-1]
    m = _dct_matrix(int(length), int(type), norm).astype(x.dtype._np)
    return matmul(x, convert_to_tensor(m))


@export("signal.idct")
def idct(input: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None, name: str | None = None) -> Any:
    """Inverse DCT (TensorFlow's: the DCT of the inverse type, unscaled unless 'ortho')."""
    inverse_type = {1: 1, 2: 3, 3: 2, 4: 4}[type]
    return dct(input, type=inverse_type, n=n, axis=axis, norm=norm)


@export("signal.inverse_stft")
def inverse_stft(stfts: Any, frame_length: int, frame_step: int, fft_length: int | None = None,
                 window_fn: Any = signal_ops.hann_window, name: str | None = None) -> Any:
    """Overlap-add of the windowed inverse FFTs of [..., frames, bins] STFTs."""
    x = signal_ops._complex(stfts)
    frame_length, frame_step = int(frame_length), int(frame_step)
    if fft_length is None:
        fft_length = 1 << (frame_length - 1).bit_length()
    frames = signal_ops.irfft(x, [int(fft_length)])
    frames = _fit(frames, [frame_length])
    if window_fn is not None:
        frames = frames * window_fn(frame_length, dtype=frames.dtype)
    return signal_ops.overlap_and_add(frames, frame_step)


@export("signal.inverse_stft_window_fn")
def inverse_stft_window_fn(frame_step: int,
                           forward_window_fn: Any = signal_ops.hann_window) -> Any:
    """The window that makes inverse_stft invert stft (the forward window over the sum of its
    overlapping squares)."""
    def window(frame_length: int, dtype: Any = _dtypes.float32) -> Any:
        forward = np.asarray(forward_window_fn(frame_length, dtype=dtype).numpy(), np.float64)
        overlaps = -(-frame_length // frame_step)
        denom = np.pad(forward ** 2, (0, overlaps * frame_step - frame_length))
        denom = np.tile(denom.reshape(overlaps, frame_step).sum(0), overlaps)
        return convert_to_tensor((forward / denom[:frame_length]).astype(
            _dtypes.as_dtype(dtype)._np))
    return window


def _window_dtype(dtype: Any) -> np.dtype:
    return _dtypes.as_dtype(dtype)._np


@export("signal.kaiser_window")
def kaiser_window(window_length: int, beta: float = 12.0, dtype: Any = _dtypes.float32,
                  name: str | None = None) -> Any:
    """The Kaiser window: I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta)."""
    n, np_dtype = int(window_length), _window_dtype(dtype)
    if n == 1:
        return convert_to_tensor(np.ones(1, np_dtype))
    half = (n - 1) / 2.0
    arg = np.arange(-half, half + 0.1, dtype=np_dtype)
    num = np.asarray(beta, np_dtype) * np.sqrt(np.maximum(np_dtype.type(1) - arg ** 2 /
                                                          np_dtype.type(half) ** 2, 0))
    num_t = convert_to_tensor(num)
    beta_t = convert_to_tensor(np.asarray(beta, np_dtype))
    return math_ops.exp(num_t - beta_t) * (bessel_i0e(num_t) / bessel_i0e(beta_t))


@export("signal.kaiser_bessel_derived_window")
def kaiser_bessel_derived_window(window_length: int, beta: float = 12.0,
                                 dtype: Any = _dtypes.float32, name: str | None = None) -> Any:
    """The Kaiser-Bessel-derived window (for MDCTs): square roots of the Kaiser window's
    normalized cumulative sums, mirrored."""
    half = int(window_length) // 2
    kaiser = kaiser_window(half + 1, beta, dtype)
    csum = reduce_ops.cumsum(kaiser)
    halfw = math_ops.sqrt(csum[:-1] / csum[-1])
    return array_ops.concat([halfw, array_ops.reverse(halfw, [0])], 0)


@export("signal.vorbis_window")
def vorbis_window(window_length: int, dtype: Any = _dtypes.float32,
                  name: str | None = None) -> Any:
    """The Vorbis power-complementary window: sin(pi/2 sin^2(pi (k + 0.5) / N))."""
    n, np_dtype = int(window_length), _window_dtype(dtype)
    arg = np.arange(n, dtype=np_dtype)
    inner = np.sin(np_dtype.type(np.pi) / np_dtype.type(n) * (arg + np_dtype.type(0.5)))
    return convert_to_tensor(np.sin(np_dtype.type(np.pi / 2) * inner ** 2).astype(np_dtype))


_MEL_BREAK_HZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def _hertz_to_mel(hz: np.ndarray) -> np.ndarray:
    return _MEL_HIGH_FREQUENCY_Q * np.log(1.0 + hz / _MEL_BREAK_HZ)


@export("signal.linear_to_mel_weight_matrix")
def linear_to_mel_weight_matrix(num_mel_bins: int = 20, num_spectrogram_bins: int = 129,
                                sample_rate: float = 8000, lower_edge_hertz: float = 125.0,
                                upper_edge_hertz: float = 3800.0, dtype: Any = _dtypes.float32,
                                name: str | None = None) -> Any:
    """[num_spectrogram_bins, num_mel_bins] triangular filters on the HTK mel scale (TF's
    construction: the DC bin is zeroed, band edges evenly spaced in mel)."""
    np_dtype = _window_dtype(dtype)
    if not 0.0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2.0:
        raise ValueError(f"linear_to_mel_weight_matrix: need 0 <= lower_edge_hertz "
                         f"({lower_edge_hertz}) < upper_edge_hertz ({upper_edge_hertz}) <= "
                         f"sample_rate / 2 ({sample_rate / 2.0})")
    f = np_dtype.type
    linear = np.linspace(f(0.0), f(sample_rate / 2.0), int(num_spectrogram_bins),
                         dtype=np_dtype)[1:]
    bins_mel = _hertz_to_mel(linear).astype(np_dtype)[:, None]
    edges = np.linspace(_hertz_to_mel(f(lower_edge_hertz)), _hertz_to_mel(f(upper_edge_hertz)),
                        int(num_mel_bins) + 2, dtype=np_dtype)
    lower, center, upper = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    lower_slopes = (bins_mel - lower) / (center - lower)
    upper_slopes = (upper - bins_mel) / (upper - center)
    weights = np.maximum(f(0.0), np.minimum(lower_slopes, upper_slopes))
    return convert_to_tensor(np.pad(weights, [[1, 0], [0, 0]]).astype(np_dtype))


@export("signal.mfccs_from_log_mel_spectrograms")
def mfccs_from_log_mel_spectrograms(log_mel_spectrograms: Any, name: str | None = None) -> Any:
    """MFCCs: the orthonormal-scaled type-II DCT of log-mel spectrograms (TF's scaling)."""
    x = _tensor(log_mel_spectrograms)
    bins = x.shape[-1]
    return dct(x, type=2) * math_ops.rsqrt(convert_to_tensor(np.asarray(bins * 2.0,
                                                                         x.dtype._np)))
