"""conv2d, conv2d_transpose and pooling: forward and gradients vs PyTorch (float64), gradients vs
finite differences (second order through the gradient primitives), every kernel path
(pointwise, kn2row, im2col, NumPy fallbacks), shape rules, graph vs eager, errors."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.kernels import conv as K
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

    monkeypatch.setattr(K, "WORKERS", 1)
    whole = run()
    monkeypatch.setattr(K, "WORKERS", 3)  # uneven slices of 5 images
    monkeypatch.setattr(K, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(K, "_idle_core", lambda: True)
    for a, b in zip(whole, run()):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_conv_kernels_restore_the_blas_thread_count():
    from tapeflow.kernels import blas

    if blas._get_threads is None:
        pytest.skip("NumPy is not linked to OpenBLAS")
    seen = []
    probe = blas.single_threaded(lambda: seen.append(blas._get_threads()))
    before = blas._get_threads()
    blas._set_threads(2)
    try:
        probe()
        assert seen == [1] and blas._get_threads() == 2
    finally:
        blas._set_threads(before)


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


POOL_CASES = [(2, 2, "VALID"), (2, 2, "SAME"), (3, 2, "SAME"), (3, 1, "SAME"), (3, 2, "VALID")]


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


@pytest.mark.parametrize("k,padding", [(2, "VALID"), (2, "SAME"), (3, "VALID")])
def test_avg_pool_tiling_fast_path_matches_general_path(monkeypatch, k, padding):
    x = _distinct((2, 6, 6, 3), 2)
    g = _distinct((2, 6 // k, 6 // k, 3), 3)
    geo = K.geometry((6, 6), (k, k), (k, k), (1, 1), padding)
    assert P.tiles(geo)
    fast = [P.avg_pool(x, geo), P.avg_pool_grad(g, geo)]
    monkeypatch.setattr(P, "tiles", lambda geo: False)
    for a, b in zip(fast, [P.avg_pool(x, geo), P.avg_pool_grad(g, geo)]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert not P.tiles(K.geometry((7, 6), (k, k), (k, k), (1, 1), "VALID"))


@pytest.mark.parametrize("k,s,padding", POOL_CASES)
def test_max_pool_grad_compiled_matches_numpy_path(monkeypatch, k, s, padding):
    x = np.round(_distinct((2, 7, 6, 3), 4) * 2) / 2  # rounding makes ties inside windows
    geo = K.geometry((7, 6), (k, k), (s, s), (1, 1), padding)
    out = P.max_pool(x, geo)
    g = _distinct(out.shape, 5)
    compiled = P.max_pool_grad(x, out, g, geo)
    monkeypatch.setattr(P, "_max_pool_grad_nb", None)
    np.testing.assert_allclose(compiled, P.max_pool_grad(x, out, g, geo), rtol=1e-12, atol=1e-12)
