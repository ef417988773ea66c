"""Cases for the ops added in session 3 of issue 18 (CTC, sampled losses, candidate samplers'
expected counts, LinearOperators, ...), shared by the recorder (record_tf_api_sweep3.py, run
under TF 2.21) and test_api_sweep3.py. A case maps the `tf` module to a tensor, a list of
tensors or a SparseTensor."""

import gzip
import zlib

import numpy as np

_rng = np.random.RandomState(0)
CTC_LOGITS = _rng.randn(6, 3, 5).astype(np.float32)
CTC_LABELS = np.array([[1, 2, 2], [3, 0, 0], [4, 1, 4]])
CTC_LABEL_LENGTH = np.array([3, 1, 2])
CTC_LOGIT_LENGTH = np.array([6, 4, 5])
CTC_WEIGHTS = np.array([1.0, 2.0, 3.0], np.float32)


def ctc_grad(**kw):
    """(loss, d sum(loss * w) / d logits) of ctc_loss on the shared logits."""
    def case(tf):
        x = tf.constant(CTC_LOGITS)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.nn.ctc_loss(CTC_LABELS, x, CTC_LABEL_LENGTH, CTC_LOGIT_LENGTH, **kw)
            total = tf.reduce_sum(loss * tf.constant(CTC_WEIGHTS))
        return [loss, tape.gradient(total, x)]
    return case


def ctc_sparse(blank):
    def case(tf):
        labels = tf.sparse.from_dense(tf.constant([[1, 2, 2], [3, 0, 0], [1, 1, 0]]))
        return tf.nn.ctc_loss(labels, tf.constant(CTC_LOGITS), None, CTC_LOGIT_LENGTH,
                              blank_index=blank)
    return case


def ctc_batch_major(tf):
    logits = tf.constant(np.transpose(CTC_LOGITS, [1, 0, 2]))
    return tf.nn.ctc_loss(CTC_LABELS, logits, CTC_LABEL_LENGTH, CTC_LOGIT_LENGTH,
                          logits_time_major=False, blank_index=2)


def ctc_beam(tf):
    decoded, log_probs = tf.nn.ctc_beam_search_decoder(tf.constant(CTC_LOGITS), CTC_LOGIT_LENGTH,
                                                       beam_width=4, top_paths=3)
    return [tf.sparse.to_dense(d) for d in decoded] + [log_probs]


_srng = np.random.RandomState(1)
SW = _srng.randn(10, 4).astype(np.float32)
SB = _srng.randn(10).astype(np.float32)
SX = _srng.randn(3, 4).astype(np.float32)
SLABELS = np.array([[1, 2], [7, 3], [0, 9]])
SAMPLED = ([2, 5, 7, 8], [[0.3, 0.2], [0.1, 0.4], [0.5, 0.6]], [0.2, 0.3, 0.25, 0.1])


def sampled_loss(kind, remove_hits):
    """(loss, gradients w.r.t. weights, biases, inputs) with fixed sampled values."""
    def case(tf):
        fn = getattr(tf.nn, kind)
        w, b, x = tf.Variable(SW), tf.Variable(SB), tf.constant(SX)
        sv = (tf.constant(SAMPLED[0], tf.int64), tf.constant(SAMPLED[1]),
              tf.constant(SAMPLED[2]))
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = fn(w, b, SLABELS, x, 4, 10, num_true=2, sampled_values=sv,
                      remove_accidental_hits=remove_hits)
        return [loss] + [tf.convert_to_tensor(g) for g in tape.gradient(loss, [w, b, x])]
    return case


def sampler_counts(name, classes=((1, 2), (4, 3)), **kw):
    """Expected counts without `unique` (p * num_sampled, whatever was drawn)."""
    def case(tf):
        fn = getattr(tf.random, name)
        _, true_count, _ = fn(tf.constant(classes, tf.int64), 2, 4, False, seed=3, **kw)
        return true_count
    return case


CASES = {
    "ctc dense": ctc_grad(),
    "ctc dense blank -1": ctc_grad(blank_index=-1),
    "ctc dense blank 3": ctc_grad(blank_index=3),
    "ctc sparse blank 0": ctc_sparse(0),
    "ctc sparse blank 4": ctc_sparse(4),
    "ctc batch major": ctc_batch_major,
    "ctc beam search": ctc_beam,
    "ctc unique labels": lambda tf: list(tf.nn.ctc_unique_labels([[3, 4, 4, 3], [1, 1, 1, 0]])),
    "ctc sparse without blank": lambda tf: tf.nn.ctc_loss(
        tf.sparse.from_dense(tf.constant([[1]])), tf.constant(CTC_LOGITS[:, :1]), None, [6]),
    "sampled_softmax_loss": sampled_loss("sampled_softmax_loss", True),
    "sampled_softmax_loss with hits": sampled_loss("sampled_softmax_loss", False),
    "nce_loss": sampled_loss("nce_loss", False),
    "nce_loss without hits": sampled_loss("nce_loss", True),
    "compute_accidental_hits": lambda tf: list(tf.nn.compute_accidental_hits(
        tf.constant([[1, 2], [4, 3]], tf.int64), tf.constant([2, 7, 1, 4], tf.int64), 2)),
    "uniform counts": sampler_counts("uniform_candidate_sampler", range_max=10),
    "log_uniform counts": sampler_counts("log_uniform_candidate_sampler", range_max=10),
    "fixed_unigram counts": sampler_counts("fixed_unigram_candidate_sampler", range_max=6,
                                           unigrams=[1, 2, 3, 4], num_reserved_ids=2,
                                           distortion=0.5),
    "fixed_unigram shard counts": sampler_counts("fixed_unigram_candidate_sampler", range_max=3,
                                                 unigrams=[1, 2, 3, 4, 5], num_shards=2,
                                                 shard=0, classes=((1, 2), (0, 1))),
    "learned_unigram counts": sampler_counts("learned_unigram_candidate_sampler", range_max=10),
    "all_candidate_sampler": lambda tf: list(tf.random.all_candidate_sampler(
        tf.constant([[1, 2], [4, 3]], tf.int64), 2, 5, True)),
}

_lrng = np.random.RandomState(2)
A3 = _lrng.randn(3, 3) + 3 * np.eye(3)
B2 = _lrng.randn(2, 2) + 2 * np.eye(2)
X3 = _lrng.randn(3, 2)
X6 = _lrng.randn(6, 2)
X4 = _lrng.randn(4, 2)
BATCH_A = _lrng.randn(2, 3, 3) + 3 * np.eye(3)

LINOPS = {
    "full": (lambda tf: tf.linalg.LinearOperatorFullMatrix(A3), X3),
    "full batch": (lambda tf: tf.linalg.LinearOperatorFullMatrix(BATCH_A), X3),
    "diag": (lambda tf: tf.linalg.LinearOperatorDiag(
        tf.constant([1.5, -2.0, 0.5], tf.float64)), X3),
    "identity": (lambda tf: tf.linalg.LinearOperatorIdentity(3, dtype=tf.float64), X3),
    "identity batch": (lambda tf: tf.linalg.LinearOperatorIdentity(
        3, batch_shape=[2], dtype=tf.float64), X3),
    "scaled identity": (lambda tf: tf.linalg.LinearOperatorScaledIdentity(
        3, tf.constant([2.0, -0.5], tf.float64)), X3),
    "lower triangular": (lambda tf: tf.linalg.LinearOperatorLowerTriangular(A3), X3),
    "composition": (lambda tf: tf.linalg.LinearOperatorComposition([
        tf.linalg.LinearOperatorFullMatrix(A3),
        tf.linalg.LinearOperatorLowerTriangular(A3.T)]), X3),
    "block diag": (lambda tf: tf.linalg.LinearOperatorBlockDiag([
        tf.linalg.LinearOperatorFullMatrix(A3),
        tf.linalg.LinearOperatorDiag(tf.constant([2.0, 3.0], tf.float64)),
        tf.linalg.LinearOperatorFullMatrix(np.array([[4.0]]))]), X6),
    "kronecker": (lambda tf: tf.linalg.LinearOperatorKronecker([
        tf.linalg.LinearOperatorFullMatrix(A3),
        tf.linalg.LinearOperatorFullMatrix(B2)]), X6),
    "low rank update": (lambda tf: tf.linalg.LinearOperatorLowRankUpdate(
        tf.linalg.LinearOperatorDiag(tf.constant([2.0, 3.0, 4.0], tf.float64)),
        u=A3[:, :2], diag_update=tf.constant([0.5, 1.5], tf.float64), v=A3.T[:, :2]), X3),
    "low rank update symmetric": (lambda tf: tf.linalg.LinearOperatorLowRankUpdate(
        tf.linalg.LinearOperatorDiag(tf.constant([2.0, 3.0, 4.0], tf.float64)),
        u=A3[:, :2]), X3),
    "toeplitz": (lambda tf: tf.linalg.LinearOperatorToeplitz(
        tf.constant([3.0, 1.0, 0.5], tf.float64), tf.constant([3.0, -1.0, 0.25], tf.float64)),
                 X3),
    "circulant": (lambda tf: tf.linalg.LinearOperatorCirculant(
        tf.signal.fft(tf.constant([4.0, 1.0, -0.5, 0.25], tf.complex128)),
        input_output_dtype=tf.complex128), X4.astype(np.complex128)),
    "circulant 2d": (lambda tf: tf.linalg.LinearOperatorCirculant2D(
        tf.signal.fft2d(tf.constant([[4.0, 1.0, 0.5], [0.5, -1.0, 0.25]], tf.complex128)),
        input_output_dtype=tf.complex128), X6.astype(np.complex128)),
    "permutation": (lambda tf: tf.linalg.LinearOperatorPermutation(
        [2, 0, 1], dtype=tf.float64), X3),
    "householder": (lambda tf: tf.linalg.LinearOperatorHouseholder(
        tf.constant([1.0, 2.0, -1.0], tf.float64)), X3),
    "tridiag": (lambda tf: tf.linalg.LinearOperatorTridiag(tf.constant(
        [[1.0, 2.0, 0.0], [4.0, 5.0, 6.0], [0.0, 7.0, 8.0]], tf.float64)), X3),
    "tridiag matrix": (lambda tf: tf.linalg.LinearOperatorTridiag(A3, "matrix"), X3),
    "adjoint": (lambda tf: tf.linalg.LinearOperatorAdjoint(
        tf.linalg.LinearOperatorFullMatrix(A3)), X3),
    "inversion": (lambda tf: tf.linalg.LinearOperatorInversion(
        tf.linalg.LinearOperatorFullMatrix(A3)), X3),
    "block lower triangular": (lambda tf: tf.linalg.LinearOperatorBlockLowerTriangular([
        [tf.linalg.LinearOperatorFullMatrix(B2)],
        [tf.linalg.LinearOperatorFullMatrix(A3[:, :2]),
         tf.linalg.LinearOperatorFullMatrix(A3)]]), np.concatenate([X3, X3[:2]])[:5]),
}


def linop_case(name):
    def case(tf):
        make, x = LINOPS[name]
        op = make(tf)
        x = tf.constant(x)
        out = [op.to_dense(), tf.constant(op.shape.as_list()), op.matmul(x),
               op.matmul(x, adjoint=True), op.matvec(x[:, 0]), op.diag_part(), op.trace(),
               op.adjoint().to_dense(), op.solve(x), op.solvevec(x[:, 1], adjoint=True),
               op.determinant(), op.log_abs_determinant(), op.inverse().to_dense(),
               op.matmul(tf.linalg.adjoint(x), adjoint_arg=True)]
        return out
    return case


def linop_grad(tf):
    """Gradients through a composition's solve and log-determinant."""
    d = tf.constant([1.5, 2.0, 0.5], tf.float64)
    m = tf.constant(A3)
    with tf.GradientTape() as tape:
        tape.watch([d, m])
        op = tf.linalg.LinearOperatorComposition([tf.linalg.LinearOperatorDiag(d),
                                                  tf.linalg.LinearOperatorFullMatrix(m)])
        y = tf.reduce_sum(op.solve(tf.constant(X3)) * 0.5) + op.log_abs_determinant()
    return tape.gradient(y, [d, m])


CASES.update({f"linop {name}": linop_case(name) for name in LINOPS})
CASES["linop gradient"] = linop_grad

SCRIPT_POINTS = np.concatenate([
    [-5, 0, 0x41, 0x5B, 0x61, 0x416, 0x5D0, 0x627, 0x915, 0x4E2D, 0x3042, 0x30A2, 0xAC00,
     0x10FFFF, 0x110000, 0xD800], np.random.RandomState(3).randint(0, 0x30000, 200)]).astype(
    np.int32)
CASES["unicode_script"] = lambda tf: tf.strings.unicode_script(tf.constant(SCRIPT_POINTS))
CASES["unicode_script ragged"] = lambda tf: tf.strings.unicode_script(
    tf.strings.unicode_decode(["a\u0416\u4e2d", "\u2135!"], "UTF-8")).flat_values


def _example(tf, **feats):
    f = {}
    for k, v in feats.items():
        if isinstance(v[0], float):
            f[k] = tf.train.Feature(float_list=tf.train.FloatList(value=v))
        else:
            f[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=v))
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()


def _records(tf):
    return [_example(tf, ix=[3, 0, 7], iy=[1, 1, 0], val=[0.5, -1.0, 2.0], w=[1]),
            _example(tf, ix=[2], iy=[4], val=[9.0], w=[2, 3])]


def sparse_feature(single, two_dims=False, sorted_=False):
    def case(tf):
        index = ["ix", "iy"] if two_dims else "ix"
        size = [8, 5] if two_dims else 8
        feats = {"sp": tf.io.SparseFeature(index, "val", tf.float32, size, sorted_),
                 "val": tf.io.VarLenFeature(tf.float32),
                 "w": tf.io.VarLenFeature(tf.int64)}
        if single:
            out = tf.io.parse_single_example(_records(tf)[0], feats)
        else:
            out = tf.io.parse_example(tf.constant(_records(tf)), feats)
        return [out["sp"].indices, out["sp"].values, out["sp"].dense_shape, out["val"].values,
                out["w"].indices]
    return case


CASES.update({
    "sparse feature batch": sparse_feature(False),
    "sparse feature batch 2d": sparse_feature(False, True),
    "sparse feature batch already sorted": sparse_feature(False, sorted_=True),
    "sparse feature single": sparse_feature(True),
    "sparse feature single 2d": sparse_feature(True, True),
})


def seeded(fn, global_seed=7):
    """fn(tf) after tf.random.set_seed(global_seed) (stateful ops' TF numbers)."""
    def case(tf):
        tf.random.set_seed(global_seed)
        try:
            return fn(tf)
        finally:
            tf.random.set_seed(None)
    return case


def traced_twice(tf):
    f = tf.function(lambda: [tf.random.gamma([3], [0.7, 4.0]), tf.random.poisson([2], 12.5)])
    return f() + f()


CASES.update({
    "stateless_gamma": lambda tf: tf.random.stateless_gamma(
        [4, 3], [4, 7], alpha=[0.3, 1.0, 6.5], beta=[1.0, 2.0, 0.5]),
    "stateless_gamma float64": lambda tf: tf.random.stateless_gamma(
        [2, 2, 2], [1, 2], alpha=[[0.9, 2.0], [15.0, 1.0]], dtype=tf.float64),
    "stateless_gamma scalar alpha": lambda tf: tf.random.stateless_gamma([5], [3, 3], alpha=2.0),
    "stateless_gamma bad shape": lambda tf: tf.random.stateless_gamma([3, 2], [3, 3],
                                                                      alpha=[1.0, 2.0, 3.0]),
    "stateless_poisson": lambda tf: tf.random.stateless_poisson(
        [5, 4], [4, 7], lam=[0.5, 3.0, 9.9, 10.0]),
    "stateless_poisson large float": lambda tf: tf.random.stateless_poisson(
        [3, 2], [9, 1], lam=[25.0, 400.0], dtype=tf.float32),
    "stateless_poisson int64": lambda tf: tf.random.stateless_poisson(
        [6], [0, 5], lam=tf.constant(2.5, tf.float64), dtype=tf.int64),
    "gamma op seed": seeded(lambda tf: [tf.random.gamma([3, 2], [0.5, 3.0], seed=11),
                                        tf.random.gamma([3, 2], [0.5, 3.0], seed=11)]),
    "gamma implicit seeds": seeded(lambda tf: [tf.random.gamma([4], 2.0, beta=3.0),
                                               tf.random.gamma([2], [1.0, 8.0],
                                                               dtype=tf.float64)]),
    "gamma only op seed": lambda tf: tf.random.gamma([3], 1.5, seed=5),
    "poisson op seed": seeded(lambda tf: [tf.random.poisson([4], [1.5, 30.0], seed=3),
                                          tf.random.poisson([4], [1.5, 30.0], seed=3),
                                          tf.random.poisson([3], 7.0, dtype=tf.int32)]),
    "gamma poisson traced": seeded(traced_twice),
})


def gamma_grads(kind, dtype_name):
    """d sum(samples * w) / d (alpha, beta)."""
    def case(tf):
        dtype = getattr(tf, dtype_name)
        alpha = tf.constant([0.4, 1.0, 3.5], dtype)
        beta = tf.constant([1.0, 2.0, 0.5], dtype)
        with tf.GradientTape() as tape:
            tape.watch([alpha, beta])
            if kind == "stateless":
                x = tf.random.stateless_gamma([4, 3], [2, 9], alpha, beta, dtype=dtype)
            else:
                x = tf.random.gamma([4], alpha, beta, dtype=dtype, seed=4)
            y = tf.reduce_sum(x * tf.constant([0.5, -1.0, 2.0], dtype))
        return [x] + tape.gradient(y, [alpha, beta])
    return case


CASES.update({
    "gamma grad stateless float64": gamma_grads("stateless", "float64"),
    "gamma grad stateless float32": gamma_grads("stateless", "float32"),
    "gamma grad stateful float64": gamma_grads("stateful", "float64"),
})

ND = np.random.RandomState(4).randn(2, 3, 4)


def _re(tf, z):
    return tf.math.real(z) + 0.5 * tf.math.imag(z)


# TF 2.21 has no CPU kernels for FFTND/IFFTND/RFFTND/IRFFTND: those are checked against
# NumPy's transforms in test_api_sweep3.py; the MDCT against TF
SIGNAL_ND = {
    "mdct": lambda tf, x: tf.signal.mdct(tf.reshape(x, [2, 12]), 8),
    "mdct ortho no window pad": lambda tf, x: tf.signal.mdct(
        tf.reshape(x, [24]), 8, window_fn=None, pad_end=True, norm="ortho"),
    "inverse_mdct": lambda tf, x: tf.signal.inverse_mdct(tf.reshape(x, [2, 3, 4])),
    "inverse_mdct ortho": lambda tf, x: tf.signal.inverse_mdct(
        tf.reshape(x, [6, 4]), window_fn=None, norm="ortho"),
}


def nd_value(fn):
    return lambda tf: fn(tf, tf.constant(ND))


def nd_grad(fn):
    def case(tf):
        x = tf.constant(ND)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(tf, x)
            w = tf.reshape(tf.range(tf.size(y), dtype=tf.float64) * 0.1 - 0.7, tf.shape(y))
            total = tf.reduce_sum(y * w)
        return tape.gradient(total, x)
    return case


CASES.update({f"signal {k}": nd_value(f) for k, f in SIGNAL_ND.items()})
CASES.update({f"signal grad {k}": nd_grad(f) for k, f in SIGNAL_ND.items()})

_nrng = np.random.RandomState(6)
IMG = _nrng.randn(2, 5, 6, 3)
FILT = _nrng.randn(3, 2, 3, 4)
DW = _nrng.randn(3, 2, 3, 2)
MORPH = _nrng.randn(2, 3, 3) * 0.5
ISO = np.array([[3.0, 1.0, 2.0, 5.0, 0.5], [1.0, 2.0, 3.0, 0.0, -1.0]])


def depthwise_backprops(tf):  # (TF 2.21 has no CPU kernel for conv2d_backprop_*_v2)
    x = tf.constant(IMG)
    gd = tf.constant(np.random.RandomState(7).randn(2, 5, 6, 6))
    return [tf.nn.depthwise_conv2d_backprop_filter(x, [3, 2, 3, 2], gd, [1, 1, 1, 1], "SAME"),
            tf.nn.depthwise_conv2d_backprop_input([2, 5, 6, 3], tf.constant(DW), gd,
                                                  [1, 1, 1, 1], "SAME")]


def morph_grad(kind, padding, strides=(1, 1, 1, 1), rates=(1, 1, 1, 1)):
    def case(tf):
        x, f = tf.constant(IMG), tf.constant(MORPH)
        with tf.GradientTape() as tape:
            tape.watch([x, f])
            y = getattr(tf.nn, kind)(x, f, list(strides), padding, "NHWC", list(rates))
            w = tf.reshape(tf.range(tf.size(y), dtype=tf.float64) * 0.01 - 0.3, tf.shape(y))
            total = tf.reduce_sum(y * w)
        return [y] + tape.gradient(total, [x, f])
    return case


def isotonic(decreasing, axis=-1):
    def case(tf):
        x = tf.constant(ISO if axis == -1 else ISO.T)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y, seg = tf.nn.isotonic_regression(x, decreasing=decreasing, axis=axis)
            total = tf.reduce_sum(y * tf.constant(np.arange(10.0).reshape(x.shape) * 0.1))
        return [y, seg, tape.gradient(total, x)]
    return case


CASES.update({
    "depthwise backprops": depthwise_backprops,
    "dilation2d same": morph_grad("dilation2d", "SAME"),
    "dilation2d valid strided": morph_grad("dilation2d", "VALID", (1, 2, 1, 1)),
    "dilation2d rates": morph_grad("dilation2d", "SAME", rates=(1, 2, 1, 1)),
    "erosion2d same": morph_grad("erosion2d", "SAME"),
    "erosion2d valid": morph_grad("erosion2d", "VALID", (1, 1, 2, 1)),
    "approx_max_k": lambda tf: list(tf.math.approx_max_k(tf.constant(ISO, tf.float32), 2)),
    # (approx_min_k has no CPU kernel in TF 2.21: checked against NumPy in the test)
    "isotonic decreasing": isotonic(True),
    "isotonic increasing axis 0": isotonic(False, 0),
    "isotonic int": lambda tf: list(tf.nn.isotonic_regression(tf.constant([[3, 1, 2]]))),
    "pool max 2d": lambda tf: tf.nn.pool(tf.constant(IMG), [2, 2], "MAX", [2, 2], "SAME"),
    "pool avg 1d": lambda tf: tf.nn.pool(tf.constant(IMG[:, 0]), [3], "AVG", [1], "VALID"),
    "batch_norm_with_global_normalization": lambda tf: [
        tf.nn.batch_norm_with_global_normalization(
            tf.constant(IMG), tf.constant([0.1, 0.2, -0.3]), tf.constant([1.5, 0.5, 2.0]),
            tf.constant([0.0, 1.0, 2.0]), tf.constant([2.0, 3.0, 4.0]), 1e-3, flag)
        for flag in (True, False)],
})

BANDS = np.array([[2.0, 3.0, 4.0, 5.0], [0.0, 0.5, -1.0, 0.25], [0.0, 0.0, 0.3, 0.7]])
RHS4 = np.random.RandomState(10).randn(4, 2)


def banded(lower, adjoint):
    def case(tf):
        b = tf.constant(BANDS if lower else BANDS[::-1].copy())
        rhs = tf.constant(RHS4)
        with tf.GradientTape() as tape:
            tape.watch([b, rhs])
            x = tf.linalg.banded_triangular_solve(b, rhs, lower=lower, adjoint=adjoint)
            total = tf.reduce_sum(x * tf.constant([[1.0, -0.5]] * 4, tf.float64))
        g = tape.gradient(total, [b, rhs])
        # the gradient of the storage's unused corner entries is arbitrary: keep the used ones
        mask = np.ones_like(BANDS)
        if lower:
            mask[1, :1] = mask[2, :2] = 0
        else:
            mask[::-1][1, 3:] = mask[::-1][2, 2:] = 0
        return [x, g[0] * tf.constant(mask), g[1]]
    return case


def tridiag_eigs(**kw):
    def case(tf):
        out = tf.linalg.eigh_tridiagonal(tf.constant([2.0, 1.0, 3.0, -1.0], tf.float64),
                                         tf.constant([0.5, -1.0, 0.25], tf.float64), **kw)
        if isinstance(out, tuple):  # eigenvectors up to sign: normalize the first entry's sign
            values, vectors = out
            return [values, vectors * tf.sign(vectors[:1])]
        return out
    return case


CASES.update({
    "banded lower": banded(True, False),
    "banded lower adjoint": banded(True, True),
    "banded upper": banded(False, False),
    "eigh_tridiagonal": tridiag_eigs(),
    "eigh_tridiagonal vectors": tridiag_eigs(eigvals_only=False),
    "eigh_tridiagonal index": tridiag_eigs(select="i", select_range=[1, 2]),
    "eigh_tridiagonal value": tridiag_eigs(select="v", select_range=[0.0, 2.5]),
})


def _edit(tf, normalize):
    hyp = tf.SparseTensor([[0, 0, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0]],
                          tf.constant([1, 2, 3, 4], tf.int64), [2, 2, 3])
    truth = tf.SparseTensor([[0, 0, 0], [0, 0, 1], [0, 0, 2], [1, 0, 0], [1, 0, 1]],
                            tf.constant([1, 3, 2, 3, 4], tf.int64), [2, 2, 3])
    return tf.edit_distance(hyp, truth, normalize=normalize)


def _edit_strings(tf):
    hyp = tf.sparse.from_dense(tf.constant([["a", "b", ""], ["c", "", ""]]))
    truth = tf.sparse.from_dense(tf.constant([["a", "", ""], ["", "", ""]]))
    return tf.edit_distance(hyp, truth)


VOL = np.random.RandomState(11).randn(1, 3, 4, 5, 2)


def volume_patches(padding, strides):
    def case(tf):
        x = tf.constant(VOL)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.extract_volume_patches(x, [1, 2, 2, 3, 1], strides, padding)
            w = tf.reshape(tf.range(tf.size(y), dtype=tf.float64) * 0.01, tf.shape(y))
            total = tf.reduce_sum(y * w)
        return [y, tape.gradient(total, x)]
    return case


def _serialized_round_trip(tf):
    sp = tf.SparseTensor([[0, 1], [0, 3], [2, 0]], tf.constant([1.5, -2.0, 4.0]), [3, 5])
    many = tf.io.serialize_many_sparse(sp)
    back = tf.io.deserialize_many_sparse(many, tf.float32)
    one = tf.io.serialize_sparse(sp)
    return [back.indices, back.values, back.dense_shape,
            tf.strings.length(tf.reshape(many, [-1])), tf.strings.length(one),
            tf.io.parse_tensor(one[1], tf.float32)]


def _mask(tf):
    a = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                         tf.constant([0, 4, 9]), tf.constant([12, 2]))
    m = tf.sparse.mask(a, [4, 12])
    return [m.values, m.indices]


def _addmm(tf):
    out = tf.sparse.sampled_addmm([[0, 1], [1, 0], [1, 2]], [1.0, 2.0, 3.0], [2, 3],
                                  tf.constant([[1.0, 2.0], [3.0, 4.0]]),
                                  tf.constant([[1.0, 0.5, -1.0], [2.0, 1.0, 0.0]]),
                                  beta=0.5, alpha=2.0)
    return list(out)


CASES.update({
    "edit_distance": lambda tf: _edit(tf, True),
    "edit_distance unnormalized": lambda tf: _edit(tf, False),
    "edit_distance strings": _edit_strings,
    "extract_volume_patches valid": volume_patches("VALID", [1, 1, 2, 1, 1]),
    "extract_volume_patches same": volume_patches("SAME", [1, 2, 1, 2, 1]),
    "serialize sparse": _serialized_round_trip,
    "sparse.mask": _mask,
    "sampled_addmm": _addmm,
    "decode_compressed": lambda tf: [tf.strings.length(tf.io.decode_compressed(
        [zlib.compress(b"hello hello"), zlib.compress(b"")], "ZLIB")),
        tf.io.decode_compressed(gzip.compress(b"abc"), "GZIP") == b"abc"],
    "decode_compressed corrupt": lambda tf: tf.io.decode_compressed(b"not zlib", "ZLIB"),
    "dtypes.cast": lambda tf: tf.dtypes.cast(tf.dtypes.complex(1.5, 2.0), tf.float64),
})

PICS = np.random.RandomState(12).rand(2, 7, 9, 3).astype(np.float32)


def _draw(tf, depth=3, colors=((1.0, 0.0, 0.0, 1.0), (0.0, 0.5, 1.0, 1.0))):
    boxes = tf.constant([[[0.1, 0.2, 0.6, 0.7], [0.5, -0.2, 1.3, 0.4]],
                         [[0.3, 0.3, 0.3, 0.9], [0.8, 0.9, 0.2, 0.1]]])
    return tf.image.draw_bounding_boxes(tf.constant(PICS[..., :depth]), boxes, colors)


def _combined(tf, pad, q=1):
    rng = np.random.RandomState(13)
    corner = rng.rand(2, 6, q, 2) * 0.7
    boxes = np.concatenate([corner, corner + rng.rand(2, 6, q, 2) * 0.5], -1).astype(np.float32)
    scores = rng.rand(2, 6, 3).astype(np.float32)
    return list(tf.image.combined_non_max_suppression(
        boxes, scores, 2, 5, iou_threshold=0.3, score_threshold=0.1, pad_per_class=pad))


def _glimpse(tf, centered, normalized, offsets):
    return tf.image.extract_glimpse(tf.constant(PICS), [4, 5], offsets, centered=centered,
                                    normalized=normalized, noise="zero")


CASES.update({
    "draw_bounding_boxes": _draw,
    "draw_bounding_boxes default colors gray": lambda tf: _draw(tf, 1, np.zeros((0, 4))),
    "draw_bounding_boxes default colors": lambda tf: _draw(tf, 3, np.zeros((0, 4))),
    "combined nms": lambda tf: _combined(tf, False),
    "combined nms pad per class": lambda tf: _combined(tf, True),
    "combined nms q per class": lambda tf: _combined(tf, False, q=3),
    "glimpse centered normalized": lambda tf: _glimpse(tf, True, True,
                                                       [[0.0, 0.0], [-0.9, 0.6]]),
    "glimpse corner pixels": lambda tf: _glimpse(tf, False, False, [[1.0, 2.0], [6.3, -1.5]]),
    "glimpse centered pixels": lambda tf: _glimpse(tf, True, False, [[1.0, 2.0], [-3.5, 0.0]]),
    "stateless_random_crop": lambda tf: tf.image.stateless_random_crop(
        tf.constant(PICS), [1, 4, 5, 3], seed=[3, 4]),
    "stateless_random_jpeg_quality": lambda tf: tf.image.stateless_random_jpeg_quality(
        tf.constant(PICS[0]), 40, 90, seed=[1, 2]),
    "adjust_jpeg_quality": lambda tf: tf.image.adjust_jpeg_quality(
        tf.constant((PICS[0] * 255).astype(np.uint8)), 75),
})


def _crosses(tf):
    a = tf.constant([["a", "b"], ["c", ""]])
    sp = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], tf.constant([5, 6, 7], tf.int64), [2, 2])
    ids = tf.constant([[1], [2]], tf.int64)
    out = [tf.sparse.cross([a, sp, ids]), tf.sparse.cross([a, ids], separator="#"),
           tf.sparse.cross_hashed([a, sp, ids], num_buckets=1000),
           tf.sparse.cross_hashed([a, ids], hash_key=123)]
    flat = []
    for s in out:
        flat += [s.indices, s.values]
    ragged = tf.ragged.cross([tf.ragged.constant([["a", "b"], []]), tf.constant([["x"], ["y"]])])
    ragged_hashed = tf.ragged.cross_hashed([tf.ragged.constant([[3, 4], [5]], tf.int64), a],
                                           num_buckets=50)
    return flat + [ragged.flat_values, ragged.row_splits, ragged_hashed.flat_values]


def _json_example(tf):
    text = ('{"features": {"feature": {"a": {"int64List": {"value": ["3", "-4"]}}, '
            '"b": {"floatList": {"value": [1.5]}}, "c": {"bytesList": {"value": ["eHk="]}}}}}')
    parsed = tf.io.parse_example(tf.io.decode_json_example([text, text]), {
        "a": tf.io.FixedLenFeature([2], tf.int64), "b": tf.io.FixedLenFeature([1], tf.float32),
        "c": tf.io.FixedLenFeature([], tf.string)})
    return [parsed["a"], parsed["b"], tf.strings.length(parsed["c"])]


CASES.update({
    "sobol_sample": lambda tf: tf.math.sobol_sample(12, 9),
    "sobol_sample skip float64": lambda tf: tf.math.sobol_sample(3, 4, skip=100,
                                                                 dtype=tf.float64),
    "crosses": _crosses,
    "decode_json_example": _json_example,
    "as_string": lambda tf: tf.strings.length(tf.as_string([1.5, -2.0], precision=2)),
})

FRAC = np.random.RandomState(14).randn(2, 7, 9, 2)


def fractional(kind, pseudo_random, overlapping):
    def case(tf):
        fn = getattr(tf.nn, f"fractional_{kind}_pool")
        return list(fn(tf.constant(FRAC), [1.0, 1.5, 1.7, 1.0], pseudo_random=pseudo_random,
                       overlapping=overlapping, seed=5))
    return case


# random region sequences: TF's outputs with TF's sequences, checked by pooling the same
# regions (test_api_sweep3.py); not run through the generic comparison
TF_ONLY = {f"fractional {kind} {p} {o}": fractional(kind, p, o)
           for kind in ("max", "avg") for p in (False, True) for o in (False, True)}


def space_to_batch_conv(padding, rate):
    def case(tf):
        x = tf.constant(IMG)
        w = tf.constant(FILT)
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.nn.with_space_to_batch(
                x, rate, padding,
                lambda inp, n, pad: tf.nn.convolution(inp, w, padding=pad), filter_shape=[3, 2])
            total = tf.reduce_sum(y * tf.cast(tf.reshape(tf.range(tf.size(y)), tf.shape(y)),
                                              tf.float64) * 0.01)
        return [y] + tape.gradient(total, [x, w])
    return case


CASES.update({
    "with_space_to_batch same": space_to_batch_conv("SAME", [2, 2]),
    "with_space_to_batch valid": space_to_batch_conv("VALID", [2, 1]),
    "with_space_to_batch pool": lambda tf: tf.nn.with_space_to_batch(
        tf.constant(IMG), [1, 2], "VALID",
        lambda inp, n, pad: tf.nn.pool(inp, [2, 2], "MAX", padding=pad)),
})

SPD = np.array([[4.0, 1.0, 0.5, 0.0], [1.0, 3.0, 0.2, 0.1], [0.5, 0.2, 2.0, 0.3],
                [0.0, 0.1, 0.3, 1.5]])


def conjugate_gradient(preconditioned, batch=False, max_iter=20, x0=None):
    def case(tf):
        m = np.stack([SPD, SPD * 2.0 + np.eye(4)]) if batch else SPD
        op = tf.linalg.LinearOperatorFullMatrix(m, is_self_adjoint=True,
                                                is_positive_definite=True)
        pre = tf.linalg.LinearOperatorDiag(tf.constant(1.0 / np.diag(SPD)),
                                           is_positive_definite=True) if preconditioned else None
        s = tf.linalg.experimental.conjugate_gradient(
            op, tf.constant([1.0, 2.0, 3.0, -1.0], tf.float64), preconditioner=pre,
            x=None if x0 is None else tf.constant(x0, tf.float64), max_iter=max_iter)
        return [s.i, s.x, s.r, s.p, s.gamma]
    return case


CASES.update({
    "conjugate_gradient": conjugate_gradient(False),
    "conjugate_gradient preconditioned": conjugate_gradient(True),
    "conjugate_gradient batch": conjugate_gradient(False, batch=True),
    "conjugate_gradient two steps from x": conjugate_gradient(False, max_iter=2,
                                                              x0=[0.1, 0.2, 0.3, 0.4]),
})

# a lossy RGB and a lossless RGBA WebP (6 x 7), written by Pillow/libwebp
WEBP_RGB = bytes.fromhex(
    "5249464684000000574542505650382078000000d002009d012a0700060001402625b002747f040007b00793"
    "303097a71c0b0000f97dba17618333e26b8913f3ffd1d9387916316c91bdc7ed91d7f4630e6d8badacd8507f"
    "ffca943fb03a058dbe38cc933338afed20f21d54791beff7f672669c314097fca87c3e7a6ff1702fa3f2eca8"
    "da67dfdcae000000")
WEBP_RGBA = bytes.fromhex(
    "5249464616010000574542505650384c090100002f064001104fe1340000a4c1dd3d39441a891fe87cc53764"
    "7e70eb1e7572881b0b00504a7777b37100777140b3a318193bb6e6773cb70100904d6c67f7e8e4955c989b8c"
    "c956db196e2c004029ddddcdc601dcc501cd8e6264ecd89adff102d5524d97128965ffec1c53f1199ee184c8"
    "48009a20e5140e195841f2a7ffc277fe52b33d9bc377f8dce3bbfd225e727996ffeeeac2dbef86356813d333"
    "7d449f28bd9db748ecc54f0ee764aff5588997a5a9982a1991afe77bf9111e602664c7ed7d2b0455788aa410"
    "6aa29e8106f82648925571054cd4d4622d66b89b0ba6460a860100160dce36b25d44ffc33da7dfc1a5da2110"
    "f3f1f53f508559a4712ef89d9a85759b8dbda4fa0600")
CASES.update({
    "decode_webp": lambda tf: tf.image.decode_webp(WEBP_RGB),
    "decode_webp rgba": lambda tf: tf.io.decode_webp(WEBP_RGBA, channels=4),
    "decode_webp wrong channels": lambda tf: tf.image.decode_webp(WEBP_RGBA, channels=3),
})


def _protos(tf):
    tensors = [tf.constant([1.5, -2.0]), tf.constant(7.0), tf.constant([[1, 2], [3, 4]])]
    data = tf.stack([tf.io.serialize_tensor(t) for t in tensors])
    sizes, (dtype, shape, content, ints) = tf.io.decode_proto(
        data, "tensorflow.TensorProto", ["dtype", "tensor_shape", "tensor_content", "float_val"],
        [tf.int32, tf.string, tf.string, tf.float32])
    encoded = tf.io.encode_proto(sizes, [dtype, shape, content, ints],
                                 ["dtype", "tensor_shape", "tensor_content", "float_val"],
                                 "tensorflow.TensorProto")
    return [sizes, dtype, shape, content, ints, encoded,
            tf.io.parse_tensor(encoded[2], tf.int32)]


CASES.update({
    "decode_proto encode_proto": _protos,
    "decode_proto unknown field": lambda tf: tf.io.decode_proto(
        [b""], "tensorflow.TensorProto", ["nope"], [tf.int32])[0],
})
