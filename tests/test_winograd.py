"""Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution vs a float64 sum over shifted windows, on
the W5 CIFAR CNN's layers (forward and input-gradient shapes), the W4 DenseNet's, odd sizes and
every padding form; and the hook in ``conv.conv2d`` (taken only where it applies)."""

import numpy as np
import pytest

from tapeflow.kernels import conv as K
from tapeflow.kernels import parallel
from tapeflow.kernels import winograd as W

pytestmark = pytest.mark.skipif(W._combine is None, reason="needs numba")

P2 = ((2, 2), (2, 2))
# (batch, height, width, cin, cout, padding)
CASES = [
    (2, 32, 32, 32, 32, "VALID"),  # W5 conv 2
    (2, 15, 15, 32, 64, "SAME"),  # W5 conv 3
    (2, 15, 15, 64, 64, "VALID"),  # W5 conv 4
    (2, 30, 30, 32, 32, P2),  # W5 conv 2, input gradient
    (2, 15, 15, 64, 32, "SAME"),  # W5 conv 3, input gradient
    (2, 13, 13, 64, 64, P2),  # W5 conv 4, input gradient
    (2, 32, 32, 3, 32, "SAME"),  # W5 conv 1
    (1, 32, 32, 16, 12, "SAME"),  # W4 DenseNet
    (1, 16, 16, 100, 12, "SAME"),
    (1, 8, 8, 148, 12, "SAME"),
    (1, 7, 9, 5, 6, "SAME"),  # odd sizes: partial last tile in both directions
    (3, 6, 11, 4, 3, "VALID"),
    (1, 1, 1, 2, 3, "SAME"),
    (1, 3, 3, 2, 3, "VALID"),
    (2, 6, 5, 3, 4, ((0, 1), (2, 0))),  # explicit, asymmetric
    (1, 4, 4, 3, 2, ((2, 2), (1, 2))),
]


def _ids(cases):
    return [f"n{n}-{h}x{w}-{ci}to{co}-{p if isinstance(p, str) else 'explicit'}"
            for n, h, w, ci, co, p in cases]


def reference(x: np.ndarray, w: np.ndarray, g: K.Geometry) -> np.ndarray:
    """Cross-correlation in float64: the sum over the 9 taps of shifted-window products."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (g.pt, g.pb), (g.pl, g.pr), (0, 0)))
    w64 = w.astype(np.float64)
    return sum(np.einsum("nhwc,co->nhwo", xp[:, a:a + g.ho, b:b + g.wo], w64[a, b])
               for a in range(3) for b in range(3))


def _data(n, h, wd, cin, cout, padding, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, wd, cin)).astype(np.float32)
    w = rng.standard_normal((3, 3, cin, cout)).astype(np.float32)
    return x, w, K.geometry((h, wd), (3, 3), (1, 1), (1, 1), padding)


def _rel_error(y, ref):
    return np.abs(y - ref).max() / np.abs(ref).max()


@pytest.mark.parametrize("variant,tol", [(W.F2, 2e-6), (W.F4, 5e-5)], ids=["F2", "F4"])
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_conv2d_matches_float64_reference(case, variant, tol):
    x, w, g = _data(*case)
    y = W.conv2d(x, w, g, variant)
    ref = reference(x, w, g)
    assert y.shape == ref.shape and y.dtype == np.float32
    assert _rel_error(y, ref) < tol


@pytest.mark.parametrize("variant", [W.F2, W.F4], ids=["F2", "F4"])
def test_chunks_and_cores_cover_the_batch(monkeypatch, variant):
    """Many small chunks (a partial last one) on each core's slice of an odd batch."""
    monkeypatch.setattr(W, "CHUNK_BYTES", 1)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    x, w, g = _data(7, 9, 7, 8, 16, "SAME", seed=1)
    assert _rel_error(W.conv2d(x, w, g, variant), reference(x, w, g)) < 5e-5


def test_non_contiguous_input():
    x, w, g = _data(2, 9, 10, 6, 5, "SAME", seed=2)
    w_view = np.ascontiguousarray(w[::-1, ::-1])[::-1, ::-1]
    assert _rel_error(W.conv2d(np.asfortranarray(x), w_view, g), reference(x, w, g)) < 5e-5


def test_channel_slices_are_read_in_place():
    """A channel slice of a wider array (SplitLike's piece of a concatenation's gradient) goes
    to the tiler as it is, for the forward pass and both operands of the filter gradient."""
    wide, w, g = _data(3, 9, 10, 11, 5, "SAME", seed=4)
    x = wide[..., 2:8]
    w = w[:, :, 2:8]
    gr_wide = np.random.default_rng(5).standard_normal((3, 9, 10, 9)).astype(np.float32)
    gr = gr_wide[..., 1:6]
    assert not x.flags.c_contiguous and W._packed_channels(x) is x
    assert _rel_error(W.conv2d(x, w, g), reference(x, w, g)) < 5e-5
    dw = W.conv2d_backprop_filter(x, gr, g)
    assert _rel_error(dw, filter_gradient_reference(x, gr, g)) < 5e-5
    assert W._packed_channels(x[..., ::2]).flags.c_contiguous  # strided channels: packed first


def test_filter_transform_keeps_the_filter():
    """G w G^T at the tile positions of the interpolation points: the row of position 0
    (point 0) and the last (infinity) are the filter's first and last taps."""
    w = np.random.default_rng(3).standard_normal((3, 3, 2, 2)).astype(np.float32)
    for variant in (W.F2, W.F4):
        u = W.filter_transform(w, variant).reshape(variant.span, variant.span, 2, 2)
        scale = variant.g[0, 0] ** 2
        np.testing.assert_allclose(u[0, 0], scale * w[0, 0], rtol=1e-6)
        np.testing.assert_allclose(u[-1, -1], w[2, 2], rtol=1e-6)


HOOKED = CASES[:6] + CASES[7:8]


@pytest.mark.parametrize("case", HOOKED, ids=_ids(HOOKED))
def test_hook_in_conv2d(monkeypatch, case):
    """conv.conv2d takes the Winograd path for the W5 layers and W4's 32x32 ones, and agrees
    with the path it replaced (im2col / kn2row) within float32 rounding."""
    x, w, g = _data(4, *case[1:])  # 4 images: enough output pixels for the hook
    calls = []
    inner = W.conv2d
    monkeypatch.setattr(W, "conv2d", lambda *a: calls.append(1) or inner(*a))
    hooked = K.conv2d(x, w, g)
    assert calls
    monkeypatch.setattr(W, "applies", lambda *a: False)
    before = K.conv2d(x, w, g)
    assert len(calls) == 1
    ref = reference(x, w, g)
    assert _rel_error(hooked, ref) < 5e-5
    assert _rel_error(hooked, before) < 5e-5


def test_input_gradient_takes_the_hook(monkeypatch):
    """Stride-1 input gradients run as convolutions with padding 2, so they go through it."""
    rng = np.random.default_rng(4)
    x, w, g = _data(4, 15, 15, 64, 64, "VALID")
    gr = rng.standard_normal((4, g.ho, g.wo, 64)).astype(np.float32)
    calls = []
    inner = W.conv2d
    monkeypatch.setattr(W, "conv2d", lambda *a: calls.append(1) or inner(*a))
    dx = K.conv2d_backprop_input(gr, w, g)
    assert calls
    # dx = sum over taps of gr shifted into the input grid times the transposed tap
    ref = np.zeros(x.shape)
    for a in range(3):
        for b in range(3):
            ref[:, a:a + g.ho, b:b + g.wo] += gr.astype(np.float64) @ w[a, b].T.astype(np.float64)
    assert _rel_error(dx, ref) < 5e-5


def filter_gradient_reference(x, gr, g):
    """dW[a, b] = sum over images and output pixels of the input under tap (a, b) times the
    output gradient, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (g.pt, g.pb), (g.pl, g.pr), (0, 0)))
    gr64 = gr.astype(np.float64)
    return np.stack([np.stack([np.einsum("nhwc,nhwo->co", xp[:, a:a + g.ho, b:b + g.wo], gr64)
                               for b in range(3)]) for a in range(3)])


@pytest.mark.parametrize("variant,tol", [(W.F2, 2e-6), (W.F4, 5e-5)], ids=["F2", "F4"])
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_filter_gradient_matches_float64_reference(case, variant, tol):
    x, w, g = _data(*case)
    gr = np.random.default_rng(5).standard_normal((x.shape[0], g.ho, g.wo, w.shape[3]))
    gr = gr.astype(np.float32)
    dw = W.conv2d_backprop_filter(x, gr, g, variant)
    ref = filter_gradient_reference(x, gr, g)
    assert dw.shape == w.shape and dw.dtype == np.float32
    assert _rel_error(dw, ref) < tol


def test_filter_gradient_takes_the_hook(monkeypatch):
    monkeypatch.setattr(W, "CHUNK_BYTES", 1)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    x, w, g = _data(5, 15, 15, 32, 64, "SAME")
    gr = np.random.default_rng(6).standard_normal((5, g.ho, g.wo, 64)).astype(np.float32)
    calls = []
    inner = W.conv2d_backprop_filter
    monkeypatch.setattr(W, "conv2d_backprop_filter", lambda *a: calls.append(1) or inner(*a))
    dw = K.conv2d_backprop_filter(x, gr, g)
    assert calls
    assert _rel_error(dw, filter_gradient_reference(x, gr, g)) < 5e-5


@pytest.mark.parametrize("kernel,strides,dilations,cin,cout,dtype", [
    ((3, 3), (2, 2), (1, 1), 32, 32, np.float32),
    ((3, 3), (1, 1), (2, 2), 32, 32, np.float32),
    ((5, 5), (1, 1), (1, 1), 32, 32, np.float32),
    ((3, 3), (1, 1), (1, 1), 3, 32, np.float32),
    ((3, 3), (1, 1), (1, 1), 64, 8, np.float32),
    ((3, 3), (1, 1), (1, 1), 11, 11, np.float32),
    ((3, 3), (1, 1), (1, 1), 32, 32, np.float64),
])
def test_applies_only_where_measured_faster(kernel, strides, dilations, cin, cout, dtype):
    g = K.geometry((16, 16), kernel, strides, dilations, "SAME")
    assert not W.applies(g, 8, cin, cout, dtype)
    assert W.applies(K.geometry((16, 16), (3, 3), (1, 1), (1, 1), "SAME"), 8, 32, 32, np.float32)


def test_applies_by_size_and_channels():
    """At least 12 channels on each side (3-channel inputs no) and 512 output pixels per call."""
    big = K.geometry((32, 32), (3, 3), (1, 1), (1, 1), "SAME")
    assert W.applies(big, 1, 52, 12, np.float32) and W.applies(big, 1, 12, 16, np.float32)
    assert not W.applies(big, 4, 3, 32, np.float32) and not W.applies(big, 4, 12, 8, np.float32)
    mid = K.geometry((16, 16), (3, 3), (1, 1), (1, 1), "SAME")
    assert W.applies(mid, 4, 100, 12, np.float32) and W.applies(mid, 4, 16, 16, np.float32)
    small = K.geometry((8, 8), (3, 3), (1, 1), (1, 1), "SAME")
    assert W.applies(small, 8, 32, 32, np.float32) and W.applies(small, 8, 148, 12, np.float32)
    assert not W.applies(small, 8, 16, 11, np.float32)
    assert not W.applies(small, 7, 32, 32, np.float32)  # fewer than 512 output pixels


def test_without_numba_the_old_path_runs(monkeypatch):
    monkeypatch.setattr(W, "_combine", None)
    x, w, g = _data(8, 8, 8, 32, 32, "SAME")
    assert not W.applies(g, 8, 32, 32, np.float32)
    assert _rel_error(K.conv2d(x, w, g), reference(x, w, g)) < 1e-5
