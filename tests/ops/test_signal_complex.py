"""tf.signal (FFTs, frame, windows, stft), complex ops, tf.roll: forward vs NumPy, gradients,
graph vs eager."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import OpCase, check_grads, op_table_tests

CASES = [
    OpCase("frame", lambda x: tf.signal.frame(x, 4, 2), lambda x: np.stack(
        [x[..., i:i + 4] for i in range(0, x.shape[-1] - 3, 2)], -2),
        lambda rng: [rng.standard_normal((2, 10))]),
    OpCase("frame_pad_end", lambda x: tf.signal.frame(x, 4, 3, pad_end=True),
           lambda x: np.stack([np.pad(x, [(0, 0), (0, 3)])[..., i:i + 4]
                               for i in range(0, 10, 3)], -2),
           lambda rng: [rng.standard_normal((2, 10))]),
    OpCase("overlap_and_add", lambda x: tf.signal.overlap_and_add(x, 2),
           lambda x: sum(np.pad(x[..., i, :], [(0, 0), (2 * i, 2 * (2 - i))])
                         for i in range(3)), lambda rng: [rng.standard_normal((2, 3, 4))]),
    OpCase("roll", lambda x: tf.roll(x, [1, -2], [0, 1]),
           lambda x: np.roll(x, [1, -2], [0, 1]), lambda rng: [rng.standard_normal((3, 5))]),
    OpCase("rfft_parts", lambda x: (tf.math.real(tf.signal.rfft(x)),
                                    tf.math.imag(tf.signal.rfft(x))),
           lambda x: (np.real(np.fft.rfft(x)), np.imag(np.fft.rfft(x))),
           lambda rng: [rng.standard_normal((2, 8))]),
    OpCase("fft_real_part", lambda x: tf.math.real(tf.signal.fft(tf.complex(x, x * 0.5))),
           lambda x: np.real(np.fft.fft(x + 0.5j * x)), lambda rng: [rng.standard_normal(6)]),
    OpCase("ifft_roundtrip", lambda x: tf.math.real(tf.signal.ifft(tf.signal.fft(
        tf.complex(x, tf.zeros_like(x))))), lambda x: x, lambda rng: [rng.standard_normal(5)]),
    OpCase("irfft", lambda x: tf.signal.irfft(tf.signal.rfft(x)), lambda x: x,
           lambda rng: [rng.standard_normal(8)]),
]

test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = op_table_tests(CASES)


def test_windows_and_stft_match_numpy():
    np.testing.assert_allclose(tf.signal.hann_window(8).numpy(),
                               0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8), atol=1e-7)
    np.testing.assert_allclose(tf.signal.hamming_window(5, periodic=False).numpy(),
                               np.hamming(5), atol=1e-7)
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    got = tf.signal.stft(x, frame_length=16, frame_step=8).numpy()
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)
    want = np.stack([np.fft.rfft(x[i:i + 16] * window) for i in range(0, 49, 8)])
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert got.dtype == np.complex64


def test_fft2d_and_shift():
    x = np.random.default_rng(1).standard_normal((4, 6))
    np.testing.assert_allclose(tf.signal.fft2d(tf.complex(x, 0 * x)).numpy(), np.fft.fft2(x),
                               atol=1e-10)
    np.testing.assert_array_equal(tf.signal.fftshift(np.arange(6)).numpy(),
                                  np.fft.fftshift(np.arange(6)))
    np.testing.assert_array_equal(tf.signal.ifftshift(np.arange(5)).numpy(),
                                  np.fft.ifftshift(np.arange(5)))


def test_complex_ops_and_gradients():
    z = tf.complex(tf.constant([3.0]), tf.constant([4.0]))
    assert z.dtype == tf.complex64
    assert float(tf.abs(z)[0]) == 5.0
    np.testing.assert_allclose(tf.math.angle(z).numpy(), [np.arctan2(4, 3)])
    assert tf.math.conj(z).numpy().tolist() == [3 - 4j]
    check_grads(lambda a, b: tf.math.real(tf.complex(a * b, a)) + tf.math.imag(
        tf.math.conj(tf.complex(b, a * a))), [np.array([0.5, 1.5]), np.array([2.0, -1.0])])


def test_register_gradient():
    from tapeflow.framework.dispatch import op

    square_op = op("TestOnlySquare", shape=lambda x: x)(np.square)

    @tf.RegisterGradient("TestOnlySquare")
    def _square_grad(o, grad):
        return [grad * 2.0 * o.inputs[0]]

    x = tf.constant([3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = square_op(x)
    assert tape.gradient(y, x).numpy().tolist() == [6.0]
    with pytest.raises(KeyError, match="two gradient"):
        tf.RegisterGradient("Relu")(lambda o, g: g)
