"""conv2d, conv2d_transpose and pooling: forward and gradients vs PyTorch (float64), gradients vs
finite differences (second order through the gradient primitives), every kernel path
(pointwise, kn2row, im2col, NumPy fallbacks), shape rules, graph vs eager, errors."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import threads
from tapeflow.kernels import conv as K
from tapeflow.kernels import parallel
from tapeflow.kernels import pool as P
from tapeflow.ops import conv_ops
from tapeflow.testing import check_grads

# (input shape, filter shape, strides, padding, dilations): covers pointwise, kn2row (Cout < Cin)
# and im2col (Cout >= Cin), odd sizes, SAME with uneven padding, explicit padding.
CONV_CASES = [
    ((2, 7, 8, 5), (3, 3, 5, 2), 1, "SAME", 1),
    ((2, 7, 8, 2), (3, 3, 2, 5), 1, "SAME", 1),
    ((2, 7, 7, 3), (3, 3, 3, 4), 2, "SAME", 1),
    ((2, 8, 8, 6), (3, 3, 6, 2), 2, "SAME", 1),
    ((1, 9, 9, 4), (3, 3, 4, 3), 1, "VALID", 2),
    ((1, 9, 8, 2), (3, 2, 2, 3), 1, "SAME", 2),
    ((2, 8, 7, 6), (2, 2, 6, 2), 2, "VALID", 1),
    ((2, 6, 6, 3), (1, 1, 3, 4), 1, "VALID", 1),
    ((2, 7, 7, 3), (1, 1, 3, 4), 2, "SAME", 1),
    ((1, 6, 6, 8), (3, 3, 8, 3), 1, [[0, 0], [1, 2], [0, 1], [0, 0]], 1),
    ((1, 7, 7, 2), (5, 5, 2, 3), 3, "SAME", 1),
]


def _ids(cases):
    return [f"x{list(c[0])}-w{list(c[1])}-s{c[2]}-{c[3] if isinstance(c[3], str) else 'explicit'}"
            f"-d{c[4]}" for c in cases]


def _torch_conv(torch, x, w, strides, padding, dilations):
    """PyTorch conv2d with TF's padding (computed here independently of tapeflow)."""
    xt = x.permute(0, 3, 1, 2)
    wt = w.permute(3, 2, 0, 1)
    h, wd = x.shape[1], x.shape[2]
    kh, kw = w.shape[0], w.shape[1]
    if isinstance(padding, list):
        (pt, pb), (pl, pr) = padding[1], padding[2]
    elif padding == "SAME":
        def same(size, k):
            out = -(-size // strides)
            total = max((out - 1) * strides + (k - 1) * dilations + 1 - size, 0)
            return total // 2, total - total // 2
        (pt, pb), (pl, pr) = same(h, kh), same(wd, kw)
    else:
        pt = pb = pl = pr = 0
    xt = torch.nn.functional.pad(xt, (pl, pr, pt, pb))
    y = torch.nn.functional.conv2d(xt, wt, stride=strides, dilation=dilations)
    return y.permute(0, 2, 3, 1)


@pytest.mark.parametrize("case", CONV_CASES, ids=_ids(CONV_CASES))
def test_conv2d_forward_and_backward_vs_torch(case):
    torch = pytest.importorskip("torch")
    xshape, wshape, strides, padding, dilations = case
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xshape), rng.standard_normal(wshape)
    xs, ws = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch([xs, ws])
        y = tf.nn.conv2d(xs, ws, strides=strides, padding=padding, dilations=dilations)
        cot = rng.standard_normal(tuple(y.shape))
        loss = tf.reduce_sum(y * cot)
    dx, dw = tape.gradient(loss, [xs, ws])
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    yt = _torch_conv(torch, xt, wt, strides, padding, dilations)
    (yt * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dx.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw.numpy(), wt.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [CONV_CASES[i] for i in (0, 2, 4, 9)],
                         ids=_ids([CONV_CASES[i] for i in (0, 2, 4, 9)]))
def test_conv2d_gradients_to_second_order(case):
    xshape, wshape, strides, padding, dilations = case
    rng = np.random.default_rng(1)
    check_grads(lambda x, w: tf.nn.conv2d(x, w, strides, padding, dilations=dilations),
                [rng.standard_normal((1,) + xshape[1:]), rng.standard_normal(wshape)], order=2)


def test_numpy_fallback_paths_match_compiled(monkeypatch):
    results = {}
    for mode in ("compiled", "numpy"):
        if mode == "numpy":
            for name in ("_tap_sum_nb", "_tap_scatter_nb", "_im2col_nb"):
                monkeypatch.setattr(K, name, None)
        outs = []
        for xshape, wshape, s, padding, d in CONV_CASES[:6]:
            r = np.random.default_rng(3)
            x, w = r.standard_normal(xshape), r.standard_normal(wshape)
            geo = K.geometry(xshape[1:3], wshape[:2], (s, s), (d, d), padding)
            y = K.conv2d(x, w, geo)
            g = r.standard_normal(y.shape)
            outs += [y, K.conv2d_backprop_input(g, w, geo), K.conv2d_backprop_filter(x, g, geo)]
        results[mode] = outs
    for a, b in zip(results["compiled"], results["numpy"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_chunking_over_the_batch_gives_the_same_result(monkeypatch):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((5, 6, 6, 7)), rng.standard_normal((3, 3, 7, 2))
    geo = K.geometry((6, 6), (3, 3), (1, 1), (1, 1), "SAME")
    g = rng.standard_normal((5, 6, 6, 2))
    whole = [K.conv2d(x, w, geo), K.conv2d_backprop_filter(x, g, geo)]
    monkeypatch.setattr(K, "CHUNK_BYTES", 1)  # one image per chunk
    for a, b in zip(whole, [K.conv2d(x, w, geo), K.conv2d_backprop_filter(x, g, geo)]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CONV_CASES, ids=_ids(CONV_CASES))
def test_splitting_the_batch_over_cores_gives_the_same_result(monkeypatch, case):
    xshape, wshape, s, padding, d = case
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((5,) + xshape[1:]), rng.standard_normal(wshape)
    geo = K.geometry(xshape[1:3], wshape[:2], (s, s), (d, d), padding)
    g = rng.standard_normal((5, geo.ho, geo.wo, wshape[3]))

    def run():
        return [K.conv2d(x, w, geo), K.conv2d_backprop_input(g, w, geo),
                K.conv2d_backprop_filter(x, g, geo)]

    monkeypatch.setattr(threads, "_intra_op", 1)
    whole = run()
    monkeypatch.setattr(threads, "_intra_op", 3)  # uneven slices of 5 images
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "idle_core", lambda: True)
    for a, b in zip(whole, run()):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_conv2d_nchw_and_four_element_strides():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 7, 7, 3)), rng.standard_normal((3, 3, 3, 4))
    nhwc = tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")
    nchw = tf.nn.conv2d(x.transpose(0, 3, 1, 2), w, strides=[1, 1, 2, 2], padding="SAME",
                        data_format="NCHW")
    np.testing.assert_allclose(nchw.numpy(), nhwc.numpy().transpose(0, 3, 1, 2), rtol=1e-12)


def test_conv2d_float32_matches_float64():
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((4, 10, 10, 16)), rng.standard_normal((3, 3, 16, 12))
    y32 = tf.nn.conv2d(x.astype(np.float32), w.astype(np.float32), 1, "SAME")
    assert y32.dtype == tf.float32
    np.testing.assert_allclose(y32.numpy(), tf.nn.conv2d(x, w, 1, "SAME").numpy(), rtol=1e-4,
                               atol=1e-4)


def test_conv2d_transpose_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((2, 4, 4, 3)), rng.standard_normal((3, 3, 5, 3))
    y = tf.nn.conv2d_transpose(x, w, output_shape=[2, 8, 8, 5], strides=2, padding="SAME")
    # SAME 3x3 stride 2 from 8 -> 4 pads (0, 1): the transpose crops 0 at top, 1 at bottom
    yt = torch.nn.functional.conv_transpose2d(torch.tensor(x).permute(0, 3, 1, 2),
                                              torch.tensor(w).permute(3, 2, 0, 1), stride=2)
    np.testing.assert_allclose(y.numpy(), yt.permute(0, 2, 3, 1).numpy()[:, :8, :8],
                               rtol=1e-10, atol=1e-10)


def test_conv_shape_rule_matches_kernel_with_unknown_batch():
    for xshape, wshape, s, padding, d in CONV_CASES:
        attrs = dict(strides=(s, s), dilations=(d, d),
                     padding=conv_ops._padding(padding, "Conv2D"))
        shape, _ = conv_ops._conv_rule(((None,) + xshape[1:], tf.float64), (wshape, tf.float64),
                                       **attrs)
        y = conv_ops._conv2d.kernel(np.zeros(xshape), np.zeros(wshape), **attrs)
        assert shape == (None,) + y.shape[1:]


def test_conv2d_graph_matches_eager(tf_function):
    rng = np.random.default_rng(8)
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)).astype(np.float32))
    w = tf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.conv2d(x, w, 1, "SAME")
            z = tf.nn.max_pool2d(tf.nn.relu(y), 2, 2, "VALID")
            loss = tf.reduce_sum(tf.nn.avg_pool2d(z, 2, 1, "SAME") ** 2)
        return (y, z, loss) + tuple(tape.gradient(loss, [x, w]))

    for e, t in zip(step(x), tf_function(step)(x)):
        np.testing.assert_allclose(np.asarray(t), e.numpy(), rtol=1e-5, atol=1e-5)


def test_conv2d_channel_mismatch_names_op_shapes_and_line():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 4, 2]), 1, "SAME")
    msg = str(info.value)
    assert "Conv2D" in msg and "3 channels" in msg and "test_conv_ops.py" in msg


@pytest.mark.parametrize("bad", [dict(padding="FULL"), dict(strides=[2, 1, 1, 1]),
                                 dict(strides=0)])
def test_conv2d_bad_arguments(bad):
    args = dict(strides=1, padding="SAME") | bad
    with pytest.raises(tf.errors.InvalidArgumentError, match="Conv2D"):
        tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 3, 2]), **args)


def test_conv2d_window_larger_than_input_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="larger than the padded input"):
        tf.nn.conv2d(tf.zeros([1, 2, 2, 1]), tf.zeros([3, 3, 1, 1]), 1, "VALID")


# --- pooling -------------------------------------------------------------------------------------


def _np_pool(x, k, s, padding, reduce):
    """Loop-by-loop reference: TF's SAME padding, windows clipped to the input."""
    n, h, w, c = x.shape
    geo = K.geometry((h, w), (k, k), (s, s), (1, 1), padding)
    out = np.zeros((n, geo.ho, geo.wo, c))
    for i in range(geo.ho):
        for j in range(geo.wo):
            r0, c0 = i * s - geo.pt, j * s - geo.pl
            win = x[:, max(r0, 0):r0 + k, max(c0, 0):c0 + k]
            out[:, i, j] = reduce(win, axis=(1, 2))
    return out


# (k, s, padding): tiling-style windows (remainder rows/columns dropped on odd sizes), windows
# with gaps between them (stride > window), overlapping and padded windows.
POOL_CASES = [(2, 2, "VALID"), (2, 2, "SAME"), (3, 2, "SAME"), (3, 1, "SAME"), (3, 2, "VALID"),
              (1, 2, "VALID"), (2, 3, "VALID"), (2, 3, "SAME")]


def _distinct(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1 - 1.0


@pytest.mark.parametrize("k,s,padding", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_forward_vs_reference(kind, k, s, padding):
    x = _distinct((2, 7, 6, 3), 0)
    fn = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    want = _np_pool(x, k, s, padding, np.max if kind == "max" else np.mean)
    np.testing.assert_allclose(fn(x, k, s, padding).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("k,s,padding", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_gradients_to_second_order(kind, k, s, padding):
    fn = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    check_grads(lambda x: fn(x, k, s, padding), [_distinct((1, 5, 6, 2), 1)], order=2)


@pytest.mark.parametrize("k,s", [(2, 2), (3, 2), (3, 1)])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_valid_vs_torch(kind, k, s):
    torch = pytest.importorskip("torch")
    x = _distinct((2, 8, 7, 3), 2)
    cot = np.random.default_rng(3).standard_normal
    xs = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = (tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d)(xs, k, s, "VALID")
        c = cot(tuple(y.shape))
        loss = tf.reduce_sum(y * c)
    xt = torch.tensor(x.transpose(0, 3, 1, 2).copy(), requires_grad=True)
    pool = torch.nn.functional.max_pool2d if kind == "max" else torch.nn.functional.avg_pool2d
    yt = pool(xt, k, s)
    (yt * torch.tensor(c.transpose(0, 3, 1, 2))).sum().backward()
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy().transpose(0, 2, 3, 1), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, xs).numpy(),
                               xt.grad.numpy().transpose(0, 2, 3, 1), rtol=1e-12)


@pytest.mark.parametrize("kind", ["MAX", "AVG"])
def test_dilated_nn_pool_vs_loops_and_torch_gradients(kind, tf_function):
    x = _distinct((2, 9, 8, 3), 5)
    window, rate = (3, 2), (2, 3)
    reduce = np.max if kind == "MAX" else np.mean
    oh, ow = 9 - (3 - 1) * 2, 8 - (2 - 1) * 3
    want = np.empty((2, oh, ow, 3))
    for i in range(oh):
        for j in range(ow):
            taps = x[:, i:i + 5:2, j:j + 4:3, :]  # the dilated 3x2 window at (i, j)
            want[:, i, j] = reduce(taps.reshape(2, -1, 3), axis=1)
    pooled = tf_function(lambda v: tf.nn.pool(v, window, kind, padding="VALID", dilations=rate))
    np.testing.assert_allclose(pooled(x).numpy(), want, rtol=1e-12)
    check_grads(lambda v: tf.nn.pool(v, window, kind, padding="VALID", dilations=rate), [x])
    torch = pytest.importorskip("torch")
    if kind == "MAX":  # torch has dilated max pooling only
        xt = torch.tensor(x.transpose(0, 3, 1, 2).copy())
        yt = torch.nn.functional.max_pool2d(xt, window, 1, dilation=rate)
        np.testing.assert_allclose(pooled(x).numpy(), yt.numpy().transpose(0, 2, 3, 1))
    with pytest.raises(ValueError, match="SAME"):
        tf.nn.pool(x, window, kind, padding="SAME", dilations=rate)
    with pytest.raises(ValueError, match="strides"):
        tf.nn.pool(x, window, kind, strides=[2, 1], dilations=rate)


def test_max_pool_gradient_goes_to_first_maximum_on_ties():
    x = tf.constant(np.ones((1, 2, 2, 1)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy().ravel(), [1, 0, 0, 0])


def test_same_avg_pool_divides_by_valid_count():
    y = tf.nn.avg_pool2d(tf.ones([1, 3, 3, 1]), 2, 2, "SAME").numpy()
    np.testing.assert_allclose(y, np.ones((1, 2, 2, 1)))


def test_pool_nchw_and_1d():
    x = _distinct((2, 6, 6, 3), 4)
    nchw = tf.nn.max_pool(x.transpose(0, 3, 1, 2), [1, 1, 2, 2], [1, 1, 2, 2], "VALID",
                          data_format="NCHW")
    np.testing.assert_allclose(nchw.numpy().transpose(0, 2, 3, 1),
                               tf.nn.max_pool(x, 2, 2, "VALID").numpy())
    seq = x[:, 0]  # (2, 6, 3): NWC
    y1 = tf.nn.avg_pool(seq, 2, 2, "VALID").numpy()
    np.testing.assert_allclose(y1, seq.reshape(2, 3, 2, 3).mean(2), rtol=1e-12)


def test_pool_kernels_handle_float32():
    x = _distinct((1, 4, 4, 2), 5).astype(np.float32)
    geo = K.geometry((4, 4), (2, 2), (2, 2), (1, 1), "SAME")
    assert P.max_pool(x, geo).dtype == np.float32
    assert P.avg_pool_grad(np.ones((1, 2, 2, 2), np.float32), geo).dtype == np.float32


def test_pool_bad_ksize_is_a_clear_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="MaxPool: ksize"):
        tf.nn.max_pool2d(tf.zeros([1, 4, 4, 1]), [2, 2, 2], 2, "VALID")


@pytest.fixture
def numpy_pool(monkeypatch):
    """Pooling kernels as without numba: every compiled loop of kernels/pool.py unset."""
    for name in [n for n in vars(P) if n.endswith("_nb")]:
        monkeypatch.setattr(P, name, None)


@pytest.mark.parametrize("k,padding", [(2, "VALID"), (2, "SAME"), (3, "VALID")])
def test_avg_pool_tiling_fast_path_matches_general_path(numpy_pool, monkeypatch, k, padding):
    x = _distinct((2, 6, 6, 3), 2)
    g = _distinct((2, 6 // k, 6 // k, 3), 3)
    geo = K.geometry((6, 6), (k, k), (k, k), (1, 1), padding)
    assert P.tiles(geo)
    fast = [P.avg_pool(x, geo), P.avg_pool_grad(g, geo)]
    monkeypatch.setattr(P, "tiles", lambda geo: False)
    for a, b in zip(fast, [P.avg_pool(x, geo), P.avg_pool_grad(g, geo)]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert not P.tiles(K.geometry((7, 6), (k, k), (k, k), (1, 1), "VALID"))


def _np_max_pool_grad(x, g, k, s, padding):
    """Loop-by-loop reference: each window's gradient to its first maximum in row-major order
    (np.argmax returns the first); a window holding a NaN passes no gradient."""
    n, h, w, c = x.shape
    geo = K.geometry((h, w), (k, k), (s, s), (1, 1), padding)
    dx = np.zeros(x.shape)
    for b in range(n):
        for i in range(geo.ho):
            for j in range(geo.wo):
                r0, c0 = i * s - geo.pt, j * s - geo.pl
                rows, cols = range(max(r0, 0), min(r0 + k, h)), range(max(c0, 0), min(c0 + k, w))
                for ch in range(c):
                    win = x[b, rows.start:rows.stop, cols.start:cols.stop, ch]
                    if np.isnan(win).any():
                        continue
                    at = np.argmax(win)
                    dx[b, rows[at // len(cols)], cols[at % len(cols)], ch] += g[b, i, j, ch]
    return dx


# (input shape, k, s, padding): the W5/W4 layouts in small (2x2/2 on even and odd sizes, where
# VALID drops the last row and column), batch 1, gaps, overlap, padding, a wide channel axis.
POOL_KERNEL_CASES = [
    ((2, 8, 8, 5), 2, 2, "VALID"),
    ((1, 13, 13, 6), 2, 2, "VALID"),
    ((3, 7, 6, 3), 2, 2, "VALID"),
    ((1, 5, 9, 40), 2, 2, "VALID"),
    ((2, 7, 8, 3), 3, 3, "VALID"),
    ((2, 7, 8, 3), 1, 2, "VALID"),
    ((2, 8, 7, 3), 2, 3, "VALID"),
    ((2, 7, 6, 3), 3, 2, "VALID"),
    ((2, 7, 6, 3), 3, 2, "SAME"),
    ((1, 5, 5, 4), 2, 2, "SAME"),
    ((2, 6, 5, 3), 3, 1, "SAME"),
]


def _tied(shape, seed, dtype):
    """Values on a coarse grid (many ties inside each window), with a few NaNs."""
    x = np.round(np.random.default_rng(seed).standard_normal(shape)).astype(dtype)
    x.ravel()[::23] = np.nan
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k,s,padding", POOL_KERNEL_CASES)
def test_max_pool_grad_goes_to_first_maximum_vs_loop_reference(shape, k, s, padding, dtype):
    x = _tied(shape, 6, dtype)
    geo = K.geometry(shape[1:3], (k, k), (s, s), (1, 1), padding)
    out = P.max_pool(x, geo)
    np.testing.assert_array_equal(out, _np_pool(x, k, s, padding, np.max))  # NaN where NaN
    g = _distinct(out.shape, 7).astype(dtype)
    dx = P.max_pool_grad(x, out, g, geo)
    assert dx.dtype == dtype and dx.shape == x.shape
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(dx, _np_max_pool_grad(x, g, k, s, padding), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k,s,padding", POOL_KERNEL_CASES)
def test_pool_kernels_compiled_match_numpy_path(monkeypatch, shape, k, s, padding, dtype):
    if P._max_pool_nb is None:
        pytest.skip("numba is not installed: only the NumPy path exists")
    x = _tied(shape, 8, dtype)
    x.ravel()[5::31] = -np.inf
    x[0, :3, :3] = -np.inf  # windows of only -inf: a padding tap that comes first takes the grad
    geo = K.geometry(shape[1:3], (k, k), (s, s), (1, 1), padding)
    out = P.max_pool(x, geo)
    g = _distinct(out.shape, 9).astype(dtype)
    compiled = [out, P.max_pool_grad(x, out, g, geo), P.avg_pool(x, geo), P.avg_pool_grad(g, geo)]
    for name in [n for n in vars(P) if n.endswith("_nb")]:
        monkeypatch.setattr(P, name, None)
    numpy = [P.max_pool(x, geo), P.max_pool_grad(x, out, g, geo), P.avg_pool(x, geo),
             P.avg_pool_grad(g, geo)]
    tol = 1e-6 if dtype == np.float32 else 1e-12
    for a, b in zip(compiled, numpy):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    np.testing.assert_array_equal(compiled[1] != 0, numpy[1] != 0)  # same taps get gradients


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_numpy_fallback_gradients(numpy_pool, kind):
    fn = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    x = _distinct((1, 7, 6, 2), 10)
    want = _np_pool(x, 2, 2, "VALID", np.max if kind == "max" else np.mean)
    np.testing.assert_allclose(fn(x, 2, 2, "VALID").numpy(), want, rtol=1e-12)
    check_grads(lambda x: fn(x, 2, 2, "VALID"), [x], order=2)


def test_disjoint_windows_fill_every_gradient_entry(monkeypatch):
    """Disjoint windows write an uninitialized dx: entries outside every window must be 0."""
    empty = np.empty
    monkeypatch.setattr(P.np, "empty", lambda *a, **kw: np.full_like(empty(*a, **kw), np.nan))
    x = _distinct((2, 9, 11, 3), 11)
    for k, s in [(2, 2), (2, 3), (1, 3)]:
        geo = K.geometry((9, 11), (k, k), (s, s), (1, 1), "VALID")
        out = P.max_pool(x, geo)
        g = _distinct(out.shape, 12)
        np.testing.assert_array_equal(P.max_pool_grad(x, out, g, geo),
                                      _np_max_pool_grad(x, g, k, s, "VALID"))
        want = np.zeros(x.shape)
        for i in range(geo.ho):
            for j in range(geo.wo):
                want[:, i * s:i * s + k, j * s:j * s + k] = g[:, i:i + 1, j:j + 1] / k**2
        np.testing.assert_allclose(P.avg_pool_grad(g, geo), want, rtol=1e-12)
