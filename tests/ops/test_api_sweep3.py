"""Ops added in session 3 of issue 18 against TF 2.21's recorded answers (api_sweep3_cases.py,
fixtures/tf_api_sweep3.json), float64 finite differences, eager-vs-traced equality, and the
candidate samplers' distributions."""

import json
import os

import api_sweep3_cases as cases
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import numeric_gradient

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_api_sweep3.json")) as f:
    RECORDED = json.load(f)


def _check(got, want, name):
    if isinstance(want, list):
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            _check(g, w, name)
        return
    assert got.dtype.name == want["dtype"], name
    assert list(got.shape) == want["shape"], name
    if want["dtype"] == "string":
        assert [b.hex() for b in np.asarray(got.numpy(), object).ravel()] == want["data"], name
        return
    data = np.array([np.nan if v is None else v for v in want["data"]], np.float64)
    tol = 2e-5 if want["dtype"] in ("float32", "complex64") else 1e-9
    value = np.asarray(got.numpy()).ravel()
    np.testing.assert_allclose(np.real(value).astype(np.float64), data, rtol=tol, atol=tol,
                               err_msg=name)
    if "imag" in want:
        np.testing.assert_allclose(np.imag(value), want["imag"], rtol=tol, atol=tol,
                                   err_msg=name)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_tensorflow(name):
    tf.random.set_seed(None)  # recorded in a fresh TF process: no global seed left by other tests
    want = RECORDED[name]
    if isinstance(want, dict) and "error" in want:
        with pytest.raises(Exception) as info:
            cases.CASES[name](tf)
        assert type(info.value).__name__ == want["error"]
        return
    _check(cases.CASES[name](tf), want, name)


def _ctc_total(x):
    loss = tf.nn.ctc_loss(cases.CTC_LABELS, x, cases.CTC_LABEL_LENGTH, cases.CTC_LOGIT_LENGTH)
    return tf.reduce_sum(loss * tf.constant(cases.CTC_WEIGHTS, tf.float64))


def test_ctc_loss_gradient_finite_differences_and_traced():
    x = cases.CTC_LOGITS.astype(np.float64)
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        total = _ctc_total(t)
    eager = tape.gradient(total, t).numpy()
    numeric = numeric_gradient(lambda v: float(_ctc_total(tf.constant(v)).numpy()), x)
    np.testing.assert_allclose(eager, numeric, rtol=1e-6, atol=1e-7)

    @tf.function
    def traced(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = _ctc_total(v)
        return y, tape.gradient(y, v)

    y, g = traced(t)
    np.testing.assert_allclose(y.numpy(), total.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), eager, rtol=1e-12, atol=1e-15)


def test_ctc_loss_impossible_alignment_is_inf():
    # two repeated labels need a blank between them: 3 frames, not 2
    loss = tf.nn.ctc_loss([[1, 1]], np.zeros((2, 1, 3), np.float32), [2], [2])
    assert np.isinf(loss.numpy()[0])


def test_sampled_softmax_loss_gradient_finite_differences():
    sv = (np.array(cases.SAMPLED[0]), np.array(cases.SAMPLED[1], np.float64),
          np.array(cases.SAMPLED[2], np.float64))
    w0, x0 = cases.SW.astype(np.float64), cases.SX.astype(np.float64)
    b = tf.constant(cases.SB.astype(np.float64))

    def loss(w, x):
        return tf.reduce_sum(tf.nn.sampled_softmax_loss(
            w, b, cases.SLABELS, x, 4, 10, num_true=2, sampled_values=sv) * [1.0, 2.0, 3.0])

    w, x = tf.constant(w0), tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch([w, x])
        y = loss(w, x)
    gw, gx = tape.gradient(y, [w, x])
    np.testing.assert_allclose(
        tf.convert_to_tensor(gw).numpy(),
        numeric_gradient(lambda v: float(loss(tf.constant(v), x).numpy()), w0), atol=1e-7)
    np.testing.assert_allclose(
        gx.numpy(), numeric_gradient(lambda v: float(loss(w, tf.constant(v)).numpy()), x0),
        atol=1e-7)
    np.testing.assert_allclose(tf.function(loss)(w, x).numpy(), y.numpy(), rtol=1e-12)


def _draw(name, unique, n=4, range_max=10, calls=1, **kw):
    fn = getattr(tf.random, name)
    classes = tf.constant([[1, 2], [4, 3]], tf.int64)
    return [fn(classes, 2, n, unique, range_max=range_max, seed=7, **kw) for _ in range(calls)]


@pytest.mark.parametrize("name", ["uniform_candidate_sampler", "log_uniform_candidate_sampler",
                                  "learned_unigram_candidate_sampler"])
def test_unique_sampler_counts_follow_the_number_of_tries(name):
    for sampled, true_count, sampled_count in _draw(name, True, calls=3):
        s = sampled.numpy()
        assert len(set(s.tolist())) == 4 and s.min() >= 0 and s.max() < 10
        # every count is 1 - (1 - p) ** n for one n >= num_sampled (or p * num_sampled)
        t, c = true_count.numpy().ravel(), sampled_count.numpy()
        assert np.all((c > 0) & (c <= 4)) and np.all(t > 0)


def test_seeded_sampler_continues_its_stream_and_repeats_after_set_seed():
    tf.random.set_seed(5)
    first = [s[0].numpy().tolist() for s in _draw("uniform_candidate_sampler", False, calls=2)]
    tf.random.set_seed(5)
    again = [s[0].numpy().tolist() for s in _draw("uniform_candidate_sampler", False, calls=2)]
    assert first == again and first[0] != first[1]


def test_log_uniform_sampler_frequencies():
    tf.random.set_seed(1)
    sampled = _draw("log_uniform_candidate_sampler", False, n=20000, range_max=5)[0][0].numpy()
    c = np.arange(5)
    want = np.log((c + 2) / (c + 1)) / np.log(6)
    np.testing.assert_allclose(np.bincount(sampled, minlength=5) / 20000, want, atol=0.015)


def test_fixed_unigram_never_draws_reserved_ids():
    sampled = _draw("fixed_unigram_candidate_sampler", False, n=200, range_max=6,
                    unigrams=[1, 2, 3, 4], num_reserved_ids=2)[0][0].numpy()
    assert sampled.min() >= 2


def test_sampler_inside_function_draws_new_values_each_call():
    @tf.function
    def draw():
        return tf.random.uniform_candidate_sampler([[0]], 1, 5, True, 1000)[0]

    assert draw().numpy().tolist() != draw().numpy().tolist()


LINOP_LOSSES = {
    # parameter -> scalar, through the shortcut each structure takes
    "toeplitz solve": lambda p: tf.reduce_sum(tf.linalg.LinearOperatorToeplitz(
        p, p * 0.5).solve(tf.constant(cases.X3)) * 0.3),
    "low rank log det": lambda p: tf.linalg.LinearOperatorLowRankUpdate(
        tf.linalg.LinearOperatorDiag(p + 3.0), u=tf.reshape(p, [3, 1]),
        diag_update=p[:1]).log_abs_determinant(),
    "low rank solve": lambda p: tf.reduce_sum(tf.linalg.LinearOperatorLowRankUpdate(
        tf.linalg.LinearOperatorDiag(p + 3.0), u=tf.reshape(p, [3, 1])).solvevec(p)),
    "kronecker determinant": lambda p: tf.linalg.LinearOperatorKronecker([
        tf.linalg.LinearOperatorLowerTriangular(tf.linalg.diag(p) + 1.0),
        tf.linalg.LinearOperatorDiag(p[:2])]).determinant(),
    "householder matvec": lambda p: tf.reduce_sum(
        tf.linalg.LinearOperatorHouseholder(p).matvec(tf.constant([1.0, -2.0, 0.5], tf.float64))
        * tf.constant([0.3, 0.1, 0.7], tf.float64)),
    "block diag inverse": lambda p: tf.reduce_sum(tf.linalg.LinearOperatorBlockDiag([
        tf.linalg.LinearOperatorScaledIdentity(2, p[0]),
        tf.linalg.LinearOperatorDiag(p[1:])]).inverse().to_dense()),
}


@pytest.mark.parametrize("name", sorted(LINOP_LOSSES))
def test_linear_operator_gradients_finite_differences_and_traced(name):
    fn = LINOP_LOSSES[name]
    p0 = np.array([1.3, 0.4, 0.9])
    p = tf.constant(p0)
    with tf.GradientTape() as tape:
        tape.watch(p)
        y = fn(p)
    grad = tape.gradient(y, p).numpy()
    numeric = numeric_gradient(lambda v: float(fn(tf.constant(v)).numpy()), p0)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.function(fn)(p).numpy(), y.numpy(), rtol=1e-12)


def test_linear_operator_hints_and_errors():
    ident = tf.linalg.LinearOperatorIdentity(3, dtype=tf.float64)
    assert ident.is_self_adjoint and ident.inverse() is ident and ident.H is ident
    assert ident.shape.as_list() == [3, 3] and ident.batch_shape.as_list() == []
    with pytest.raises(ValueError, match="positive definite"):
        tf.linalg.LinearOperatorFullMatrix(np.eye(2), is_positive_definite=True,
                                           is_non_singular=False)
    wide = tf.linalg.LinearOperatorFullMatrix(np.ones((2, 3)))
    assert wide.is_square is False and wide.domain_dimension == 3
    with pytest.raises(NotImplementedError):
        wide.solve(np.ones((2, 1)))
    with pytest.raises(ValueError, match="Cholesky"):
        wide.cholesky()
    spd = tf.linalg.LinearOperatorFullMatrix(cases.A3 @ cases.A3.T, is_self_adjoint=True,
                                             is_positive_definite=True)
    chol = spd.cholesky()
    np.testing.assert_allclose((chol @ chol.H).to_dense().numpy(), cases.A3 @ cases.A3.T)
    assert isinstance(ident @ spd, tf.linalg.LinearOperatorComposition)


def test_gamma_alpha_gradient_keeps_the_cdf_level():
    """Implicit reparameterization: moving alpha by eps and the sample by eps * dx/dalpha
    leaves the sample's CDF level unchanged (a finite-difference check independent of TF)."""
    from scipy import special

    alpha = tf.constant([0.05, 0.4, 1.0, 3.5, 40.0], tf.float64)
    a = alpha.numpy()
    for row in range(3):
        with tf.GradientTape() as tape:
            tape.watch(alpha)
            sample = tf.random.stateless_gamma([3, 5], [5, 1], alpha, dtype=tf.float64)[row]
            total = tf.reduce_sum(sample)
        dx = tape.gradient(total, alpha).numpy()
        s, eps = sample.numpy(), 1e-6 * a
        level_up = special.gammainc(a + eps, s + eps * dx)
        level_down = special.gammainc(a - eps, s - eps * dx)
        np.testing.assert_allclose(level_up - level_down, 0.0, atol=1e-11)


FFTND = {  # tapeflow call, the NumPy transform it must equal
    "fftnd": (lambda x: tf.signal.fftnd(x), lambda x: np.fft.fftn(x)),
    "fftnd axes length ortho": (
        lambda x: tf.signal.fftnd(x, fft_length=[5, 3], axes=[0, 2], norm="ortho"),
        lambda x: np.fft.fftn(x, s=[5, 3], axes=[0, 2], norm="ortho")),
    "ifftnd forward": (lambda x: tf.signal.ifftnd(x, axes=[1, 2], norm="forward"),
                       lambda x: np.fft.ifftn(x, axes=[1, 2], norm="forward")),
    "rfftnd": (lambda x: tf.signal.rfftnd(tf.math.real(x), fft_length=[3, 6]),
               lambda x: np.fft.rfftn(x.real, s=[3, 6], axes=[1, 2])),
    "irfftnd": (lambda x: tf.signal.irfftnd(x), lambda x: np.fft.irfftn(x)),
    "irfftnd length ortho": (
        lambda x: tf.signal.irfftnd(x, fft_length=[2, 5], axes=[0, 2], norm="ortho"),
        lambda x: np.fft.irfftn(x, s=[2, 5], axes=[0, 2], norm="ortho")),
}


@pytest.mark.parametrize("name", sorted(FFTND))
def test_fftnd_family_matches_numpy_with_gradients(name):
    ours, theirs = FFTND[name]
    rng = np.random.RandomState(5)
    z = rng.randn(2, 3, 4) + 1j * rng.randn(2, 3, 4)
    np.testing.assert_allclose(ours(tf.constant(z)).numpy(), theirs(z), rtol=1e-10, atol=1e-12)
    w = rng.randn(*theirs(z).shape)

    def loss(re):  # a real loss of the real part of the input (complex64 dtypes aside)
        out = ours(tf.complex(re, tf.constant(z.imag)))
        if not out.dtype.is_complex:
            return tf.reduce_sum(out * w)
        return tf.reduce_sum(tf.math.real(out) * w + 0.3 * tf.math.imag(out) * w)

    re = tf.constant(z.real)
    with tf.GradientTape() as tape:
        tape.watch(re)
        y = loss(re)
    numeric = numeric_gradient(lambda v: float(loss(tf.constant(v)).numpy()), z.real)
    np.testing.assert_allclose(tape.gradient(y, re).numpy(), numeric, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tf.function(loss)(re).numpy(), y.numpy(), rtol=1e-12)


def test_fixed_unigram_reads_counts_from_a_vocab_file(tmp_path):
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("the,40\nof,10\ncat,6\nsat,4\n")
    _, true_count, _ = tf.random.fixed_unigram_candidate_sampler(
        [[0, 3]], 2, 5, False, 4, vocab_file=str(vocab), distortion=0.5)
    w = np.sqrt([40.0, 10.0, 6.0, 4.0])
    np.testing.assert_allclose(true_count.numpy(), [[5 * w[0] / w.sum(), 5 * w[3] / w.sum()]],
                               rtol=1e-6)


def test_conv2d_backprop_v2_match_torch():
    """TF 2.21 has no CPU kernels for these: PyTorch's convolution gradients are the check."""
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(9)
    x, w = rng.randn(2, 7, 6, 3), rng.randn(3, 2, 3, 4)
    g = rng.randn(2, 3, 3, 4)
    tx = torch.tensor(x.transpose(0, 3, 1, 2))
    tw = torch.tensor(w.transpose(3, 2, 0, 1))
    tg = torch.tensor(g.transpose(0, 3, 1, 2))
    want_w = torch.nn.grad.conv2d_weight(tx, tw.shape, tg, stride=2).numpy().transpose(2, 3, 1, 0)
    want_x = torch.nn.grad.conv2d_input(tx.shape, tw, tg, stride=2).numpy().transpose(0, 2, 3, 1)
    got_w = tf.conv2d_backprop_filter_v2(x, w, g, [1, 2, 2, 1], "VALID").numpy()
    got_x = tf.conv2d_backprop_input_v2(x, w, g, [1, 2, 2, 1], "VALID").numpy()
    np.testing.assert_allclose(got_w, want_w, rtol=1e-10)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-10)


def test_approx_k_along_another_axis_and_traced():
    x = np.random.RandomState(2).randn(5, 3)
    values, idx = tf.math.approx_min_k(x, 2, reduction_dimension=0)
    np.testing.assert_array_equal(values.numpy(), np.sort(x, axis=0)[:2])
    np.testing.assert_array_equal(idx.numpy(), np.argsort(x, axis=0)[:2])
    traced = tf.function(lambda t: tf.math.approx_max_k(t, 2)[0])(tf.constant(x))
    np.testing.assert_array_equal(traced.numpy(), -np.sort(-x, axis=1)[:, :2])


MORPH_LOSSES = {
    "dilation2d": lambda x, f: tf.nn.dilation2d(x, f, [1, 1, 1, 1], "SAME", "NHWC",
                                                [1, 1, 1, 1]),
    "erosion2d rates": lambda x, f: tf.nn.erosion2d(x, f, [1, 2, 1, 1], "VALID", "NHWC",
                                                    [1, 1, 2, 1]),
    "isotonic": lambda x, f: tf.nn.isotonic_regression(x[0, :, :, 0] + f[0, 0, 0])[0],
}


@pytest.mark.parametrize("name", sorted(MORPH_LOSSES))
def test_morphology_and_isotonic_gradients_finite_differences(name):
    fn = MORPH_LOSSES[name]
    rng = np.random.RandomState(3)
    x0, f0 = rng.randn(1, 5, 6, 2), rng.randn(2, 2, 2) * 0.3

    def loss(x, f):
        y = fn(tf.constant(x), tf.constant(f))
        return float(np.sum(y.numpy() * np.cos(np.arange(y.numpy().size)).reshape(y.shape)))

    x, f = tf.constant(x0), tf.constant(f0)
    with tf.GradientTape() as tape:
        tape.watch([x, f])
        y = fn(x, f)
        total = tf.reduce_sum(y * np.cos(np.arange(int(np.prod(y.shape)))).reshape(y.shape))
    gx, gf = tape.gradient(total, [x, f])
    np.testing.assert_allclose(gx.numpy(), numeric_gradient(lambda v: loss(v, f0), x0), atol=1e-6)
    np.testing.assert_allclose(gf.numpy(), numeric_gradient(lambda v: loss(x0, v), f0), atol=1e-6)
    np.testing.assert_allclose(tf.function(fn)(x, f).numpy(), y.numpy(), rtol=1e-12)


def test_hessians_in_a_traced_function_and_not_eagerly():
    @tf.function(autograph=False)
    def hess(x):
        return tf.hessians(tf.reduce_sum(x[0] ** 3 * x[1]), x)[0]

    x = np.array([1.5, -2.0])
    want = [[6 * x[0] * x[1], 3 * x[0] ** 2], [3 * x[0] ** 2, 0.0]]
    np.testing.assert_allclose(hess(tf.constant(x)).numpy(), want, rtol=1e-12)
    with pytest.raises(Exception, match="GradientTape"):
        tf.hessians(tf.constant(1.0), tf.constant(2.0))


def test_matching_files_and_write_graph(tmp_path):
    for n in ("b.txt", "a.txt", "c.bin"):
        (tmp_path / n).write_text(n)
    found = tf.io.matching_files(str(tmp_path / "*.txt")).numpy().tolist()
    assert found == [str(tmp_path / "a.txt").encode(), str(tmp_path / "b.txt").encode()]
    once = tf.io.match_filenames_once(str(tmp_path / "*.bin"))
    assert not once.trainable and once.numpy().tolist() == [str(tmp_path / "c.bin").encode()]
    f = tf.function(lambda x: tf.nn.relu(x) * 2.0)
    graph = f.get_concrete_function(tf.constant([1.0])).graph
    text = tf.io.write_graph(graph, str(tmp_path / "logs"), "g.pbtxt")
    binary = tf.io.write_graph(graph, str(tmp_path / "logs"), "g.pb", as_text=False)
    assert 'op: "Relu"' in open(text).read()
    from tapeflow.summary.graph_def import as_graph_def

    assert open(binary, "rb").read() == as_graph_def(graph).SerializeToString()


def test_stateless_parameterized_truncated_normal():
    from scipy import special

    n = 4000
    args = dict(means=[1.0, -3.0], stddevs=[2.0, 0.5], minvals=[0.5, 1.0], maxvals=[10.0, 2.0])
    x = tf.random.stateless_parameterized_truncated_normal([n, 2], [1, 2], **args).numpy()
    again = tf.random.stateless_parameterized_truncated_normal([n, 2], [1, 2], **args)
    np.testing.assert_array_equal(again.numpy(), x)
    for j in range(2):
        lo, hi, m, s = (args[k][j] for k in ("minvals", "maxvals", "means", "stddevs"))
        v = np.sort(x[:, j].astype(np.float64))
        assert lo <= v[0] and v[-1] <= hi
        # the second interval lies 8-10 sigma above its mean: its CDF from the upper tail
        za, zb, z = (lo - m) / s, (hi - m) / s, (v - m) / s
        cdf = (special.ndtr(-za) - special.ndtr(-z)) / (special.ndtr(-za) - special.ndtr(-zb))
        ks = np.max(np.abs(cdf - (np.arange(n) + 0.5) / n))
        assert ks < 1.95 / np.sqrt(n)  # Kolmogorov-Smirnov at the 0.1% level


def test_sample_distorted_bounding_box_covers_a_box_and_repeats_with_its_seed():
    box = tf.constant([[[0.1, 0.2, 0.5, 0.6]]])
    for k in range(5):
        begin, size, bbox = tf.image.stateless_sample_distorted_bounding_box(
            [40, 60, 3], box, seed=[k, 1], min_object_covered=0.5,
            aspect_ratio_range=(0.5, 2.0), area_range=(0.1, 0.9))
        again = tf.image.stateless_sample_distorted_bounding_box(
            [40, 60, 3], box, seed=[k, 1], min_object_covered=0.5,
            aspect_ratio_range=(0.5, 2.0), area_range=(0.1, 0.9))
        np.testing.assert_array_equal(begin.numpy(), again[0].numpy())
        (y, x, _), (h, w, c) = begin.numpy(), size.numpy()
        assert c == -1 and 0 <= y and y + h <= 40 and 0 <= x and x + w <= 60
        assert 0.1 * 2400 <= h * w <= 0.9 * 2400
        inter = max(0, min(20, y + h) - max(4, y)) * max(0, min(36, x + w) - max(12, x))
        assert inter / (16 * 24) >= 0.5
        np.testing.assert_allclose(bbox.numpy()[0, 0], [y / 40, x / 60, (y + h) / 40,
                                                        (x + w) / 60], rtol=1e-6)
    crop = tf.slice(tf.zeros([40, 60, 3]), begin, size)
    assert crop.shape == (h, w, 3)
    begin, size, _ = tf.image.sample_distorted_bounding_box([40, 60, 3], box, seed=3)
    assert np.all(size.numpy()[:2] > 0)


def test_index_shuffle_is_a_seeded_bijection():
    for n in (1, 2, 7, 64, 1000):
        p = tf.random.experimental.index_shuffle(tf.range(n, dtype=tf.int64), [4, 2], n - 1)
        assert sorted(p.numpy().tolist()) == list(range(n))
    a = tf.random.experimental.index_shuffle(tf.range(50, dtype=tf.int64), [4, 2], 49).numpy()
    b = tf.random.experimental.index_shuffle(tf.range(50, dtype=tf.int64), [4, 3], 49).numpy()
    assert a.tolist() != b.tolist() and a.tolist() != list(range(50))
    one = tf.random_index_shuffle(tf.constant(7, tf.int64), [4, 2, 0], 49)
    assert one.dtype == tf.int64 and int(one.numpy()) == a[7]
    x = tf.reshape(tf.range(12), [6, 2])
    shuffled = tf.random.experimental.stateless_shuffle(x, [1, 9]).numpy()
    assert sorted(shuffled[:, 0].tolist()) == list(range(0, 12, 2))
    np.testing.assert_array_equal(shuffled[:, 1], shuffled[:, 0] + 1)
    traced = tf.function(lambda t: tf.random.experimental.stateless_shuffle(t, [1, 9]))(x)
    np.testing.assert_array_equal(traced.numpy(), shuffled)


def test_register_tensor_conversion_function_and_aliases():
    class Meters:
        def __init__(self, v):
            self.v = v

    def convert(value, dtype=None, name=None, as_ref=False):
        return tf.constant(value.v, dtype or tf.float32)

    from tapeflow.framework import constant as constant_mod

    before = list(constant_mod._conversions)
    try:
        tf.register_tensor_conversion_function(Meters, convert)
        assert tf.add(Meters(2.0), tf.constant(1.0)).numpy() == 3.0
        assert tf.convert_to_tensor(Meters([1.0, 2.0]), tf.float64).dtype == tf.float64
        with pytest.raises(TypeError):
            tf.register_tensor_conversion_function(float, convert)
    finally:
        constant_mod._conversions[:] = before
    assert tf.config.experimental_functions_run_eagerly() is False
    assert tf.AggregationMethod.DEFAULT == tf.AggregationMethod.ADD_N
    assert tf.dtypes.cast is tf.cast


@pytest.mark.parametrize("name", sorted(cases.TF_ONLY))
def test_fractional_pool_regions_match_tensorflow(name):
    from tapeflow.ops.fractional_pool import pool_regions

    out, rows, cols = RECORDED[name]
    kind, overlapping = name.split()[1], name.endswith("True")
    rows = np.array(rows["data"], np.int64)
    cols = np.array(cols["data"], np.int64)
    got = pool_regions(tf.constant(cases.FRAC), rows, cols, overlapping, kind)
    _check(got, out, name)
    # our own draws: a valid partition of the same sizes
    ours = cases.TF_ONLY[name](tf)
    r = ours[1].numpy()
    assert r[0] == 0 and r[-1] == 7 and len(r) == len(rows) and set(np.diff(r)) <= {1, 2}
    assert ours[0].shape == got.shape


def test_fractional_pool_gradient_finite_differences():
    from tapeflow.ops.fractional_pool import pool_regions

    rows, cols = np.array([0, 2, 3, 5, 7]), np.array([0, 2, 4, 5, 7, 9])
    x0 = np.random.RandomState(15).randn(1, 7, 9, 2)
    w = np.random.RandomState(16).randn(1, 4, 5, 2)
    for kind in ("max", "avg"):
        def loss(x, kind=kind):
            return tf.reduce_sum(pool_regions(tf.constant(x), rows, cols, True, kind) * w)

        x = tf.constant(x0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(pool_regions(x, rows, cols, True, kind) * w)
        numeric = numeric_gradient(lambda v: float(loss(v).numpy()), x0)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), numeric, atol=1e-6)


def test_conjugate_gradient_traced_equals_eager():
    op = tf.linalg.LinearOperatorFullMatrix(cases.SPD, is_self_adjoint=True,
                                            is_positive_definite=True)
    rhs = tf.constant([1.0, 2.0, 3.0, -1.0], tf.float64)
    eager = tf.linalg.experimental.conjugate_gradient(op, rhs)
    traced = tf.function(lambda b: tf.linalg.experimental.conjugate_gradient(op, b).x)(rhs)
    np.testing.assert_allclose(traced.numpy(), eager.x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(eager.x.numpy(), np.linalg.solve(cases.SPD, rhs.numpy()),
                               rtol=1e-8)
    with pytest.raises(ValueError, match="positive definite"):
        tf.linalg.experimental.conjugate_gradient(tf.linalg.LinearOperatorFullMatrix(
            cases.SPD), rhs)
