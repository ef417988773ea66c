"""Values and gradients of functions added in the API coverage sweep, shared by the recorder
(record_tf_api_sweep.py, run under TF 2.21) and test_api_sweep.py. A case maps the `tf` module
to a tensor or a list of tensors; `grad_case` turns f(x) into the gradient of sum(f(x) * w)."""

import numpy as np

X = np.array([0.3, 0.9, 1.7, 2.5])
W = np.array([0.7, -1.1, 0.4, 1.3])


def grad_case(fn, x=X):
    """The gradient of sum(fn(tf, x) * W) with respect to x (float64)."""
    def case(tf):
        t = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = tf.reduce_sum(fn(tf, t) * tf.constant(W[:len(x)], dtype=t.dtype))
        return tape.gradient(y, t)
    return case


UNARY = {
    "bessel_i0": lambda tf, x: tf.math.bessel_i0(x),
    "bessel_i1": lambda tf, x: tf.math.bessel_i1(x),
    "bessel_i1e": lambda tf, x: tf.math.bessel_i1e(x),
    "erfcinv": lambda tf, x: tf.math.erfcinv(x / 3.0),
    "igamma": lambda tf, x: tf.math.igamma(tf.constant(1.5, x.dtype), x),
    "igammac": lambda tf, x: tf.math.igammac(tf.constant(2.5, x.dtype), x),
    "betainc": lambda tf, x: tf.math.betainc(tf.constant(2.0, x.dtype),
                                             tf.constant(3.0, x.dtype), x / 3.0),
    "polygamma": lambda tf, x: tf.math.polygamma(tf.constant(2.0, x.dtype), x),
    "zeta": lambda tf, x: tf.math.zeta(tf.constant(3.0, x.dtype), x),
    "cumulative_logsumexp": lambda tf, x: tf.math.cumulative_logsumexp(x),
    "cumulative_logsumexp reverse exclusive": lambda tf, x: tf.math.cumulative_logsumexp(
        x, exclusive=True, reverse=True),
}

def value_case(fn):
    """fn(tf, X) itself."""
    return lambda tf: fn(tf, tf.constant(X))


CASES = {name: value_case(f) for name, f in UNARY.items()}
CASES.update({f"grad {name}": grad_case(f) for name, f in UNARY.items()})
CASES.update({
    "lbeta": lambda tf: tf.math.lbeta(tf.constant([[1.0, 2.0], [3.0, 4.0]])),
    "reduce_euclidean_norm": lambda tf: [tf.math.reduce_euclidean_norm([[3, 4], [5, 12]], 1),
                                         tf.math.reduce_euclidean_norm([[3.0, 4.0]])],
    "invert_permutation": lambda tf: tf.math.invert_permutation([2, 0, 3, 1]),
    "nextafter": lambda tf: tf.math.nextafter(tf.constant([1.0, 0.0]), tf.constant([2.0, -1.0])),
    "accumulate_n": lambda tf: tf.math.accumulate_n([tf.ones([2]), tf.ones([2]) * 2.0]),
    "bessel float32": lambda tf: tf.math.bessel_i1e(tf.constant([-1.5, 0.0, 3.0])),
})

SIG = np.random.RandomState(0).randn(2, 4, 6)
WAVE = np.sin(np.arange(64) / 3.0)


def _real_of(tf, z):
    return tf.math.real(z) + 0.5 * tf.math.imag(z)


SIGNAL = {
    "rfft2d": lambda tf, x: _real_of(tf, tf.signal.rfft2d(x)),
    "rfft2d fft_length": lambda tf, x: _real_of(tf, tf.signal.rfft2d(x, [3, 8])),
    "irfft2d": lambda tf, x: tf.signal.irfft2d(tf.signal.rfft2d(x) * 1.5, [4, 5]),
    "rfft3d round trip": lambda tf, x: tf.signal.irfft3d(tf.signal.rfft3d(x)),
    "dct2": lambda tf, x: tf.signal.dct(x, type=2),
    "dct1": lambda tf, x: tf.signal.dct(x, type=1),
    "dct4 ortho n": lambda tf, x: tf.signal.dct(x, type=4, norm="ortho", n=4),
    "idct3 ortho": lambda tf, x: tf.signal.idct(x, type=3, norm="ortho"),
    "mfccs": lambda tf, x: tf.signal.mfccs_from_log_mel_spectrograms(x),
}


def signal_value(fn):
    return lambda tf: fn(tf, tf.constant(SIG))


def signal_grad(fn):
    """The gradient of sum(fn(x) * a fixed ramp) with respect to x (float64)."""
    def case(tf):
        x = tf.constant(SIG)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(tf, x)
            ramp = tf.reshape(tf.range(tf.size(y), dtype=y.dtype) / 10.0, tf.shape(y))
            loss = tf.reduce_sum(tf.sin(y) * ramp)
        return tape.gradient(loss, x)
    return case


CASES.update({f"signal {name}": signal_value(f) for name, f in SIGNAL.items()})
CASES.update({f"signal grad {name}": signal_grad(f) for name, f in SIGNAL.items()})
CASES.update({
    "kaiser_window": lambda tf: [tf.signal.kaiser_window(5), tf.signal.kaiser_window(
        6, beta=3.0, dtype=tf.float64), tf.signal.kaiser_window(1)],
    "vorbis_window": lambda tf: tf.signal.vorbis_window(7),
    "kaiser_bessel_derived_window": lambda tf: tf.signal.kaiser_bessel_derived_window(8),
    "linear_to_mel_weight_matrix": lambda tf: tf.signal.linear_to_mel_weight_matrix(
        4, 9, 8000, 100.0, 3000.0),
    "linear_to_mel defaults": lambda tf: tf.signal.linear_to_mel_weight_matrix(),
    "inverse_stft": lambda tf: tf.signal.inverse_stft(
        tf.signal.stft(tf.constant(WAVE, tf.float32), 16, 4), 16, 4,
        window_fn=tf.signal.inverse_stft_window_fn(4)),
    "inverse_stft default window": lambda tf: tf.signal.inverse_stft(
        tf.signal.stft(tf.constant(WAVE, tf.float32), 12, 5, fft_length=16), 12, 5,
        fft_length=16),
})

IMG = np.arange(24.0).reshape(1, 3, 4, 2)


def _s2b(tf, x):
    return tf.space_to_batch_nd(x, [2, 2], [[1, 0], [0, 0]])


def _proto_hex(tf, value, **kw):
    return tf.constant(tf.make_tensor_proto(value, **kw).SerializeToString())


CASES.update({
    "space_to_batch_nd": lambda tf: _s2b(tf, tf.constant(IMG)),
    "space_to_batch": lambda tf: tf.space_to_batch(tf.constant(IMG[:, :2]), [2, 2],
                                                   [[0, 0], [0, 0]]),
    "batch_to_space": lambda tf: tf.batch_to_space(_s2b(tf, tf.constant(IMG)), [2, 2],
                                                   [[1, 0], [0, 0]]),
    "grad space_to_batch_nd": lambda tf: _grad_of(tf, lambda x: _s2b(tf, x) * 2.0, IMG),
    "grad batch_to_space": lambda tf: _grad_of(
        tf, lambda x: tf.batch_to_space(x, [2, 2], [[1, 0], [0, 1]]),
        np.arange(32.0).reshape(4, 2, 2, 2)),
    "required_space_to_batch_paddings": lambda tf: list(tf.required_space_to_batch_paddings(
        [3, 5], [2, 4], [[1, 0], [0, 0]])),
    "histogram_fixed_width_bins": lambda tf: tf.histogram_fixed_width_bins(
        [-1.0, 0.0, 1.5, 2.0, 5.0, 15.0], [0.0, 5.0], nbins=5),
    "bitcast": lambda tf: [tf.bitcast(tf.constant([1.0], tf.float32), tf.int32),
                           tf.bitcast(tf.constant([1, 2], tf.int8), tf.int16),
                           tf.bitcast(tf.constant(1, tf.int32), tf.uint8)],
    "fingerprint": lambda tf: [tf.fingerprint(tf.constant(["a", "hello"])),
                               tf.fingerprint(tf.constant([[1, 2], [3, 4]], tf.int32))],
    "parallel_stack traced": lambda tf: tf.function(
        lambda: tf.parallel_stack([tf.ones([2]), tf.zeros([2])]))(),
    "make_ndarray": lambda tf: tf.constant(tf.make_ndarray(tf.make_tensor_proto(
        [[1, 2]], dtype=tf.int64))),
    "make_tensor_proto bytes": lambda tf: [
        _proto_hex(tf, 3.0), _proto_hex(tf, np.ones([2, 2], np.float32)),
        _proto_hex(tf, [1, 2, 3], shape=[3]), _proto_hex(tf, 7, dtype=tf.int64),
        _proto_hex(tf, [b"ab", b"c"]), _proto_hex(tf, 2.0, shape=[2, 2])],
})


def _grad_of(tf, fn, x0):
    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
        ramp = tf.reshape(tf.range(tf.size(y), dtype=y.dtype), tf.shape(y))
        loss = tf.reduce_sum(y * ramp)
    return tape.gradient(loss, x)

MAT = np.array([[1.0, 0.4, -0.3], [0.2, 1.5, 0.1], [-0.5, 0.3, 0.8]])
SPD = MAT @ MAT.T + np.eye(3)
DIAGS = np.array([[2.0, 3.0, 0.0], [5.0, 4.0, 6.0], [0.0, 1.5, 0.5]])

LINALG = {
    "expm": lambda tf, x: tf.linalg.expm(x),
    "sqrtm": lambda tf, x: tf.linalg.sqrtm(tf.matmul(x, x, transpose_b=True) + tf.eye(
        3, dtype=x.dtype)),
    "lu_solve": lambda tf, x: tf.linalg.lu_solve(*tf.linalg.lu(tf.constant(SPD)), x),
    "lu_matrix_inverse of x": lambda tf, x: tf.linalg.lu_reconstruct(*tf.linalg.lu(x)),
    "tridiagonal_solve": lambda tf, x: tf.linalg.tridiagonal_solve(tf.constant(DIAGS), x),
    "tridiagonal_solve diagonals": lambda tf, x: tf.linalg.tridiagonal_solve(
        x * 2.0 + tf.constant(np.eye(3) * 4.0), tf.constant([[1.0], [2.0], [3.0]], tf.float64)),
    "tridiagonal_matmul": lambda tf, x: tf.linalg.tridiagonal_matmul(x, tf.constant(MAT)),
}

def linalg_value(fn):
    return lambda tf: fn(tf, tf.constant(MAT))


def linalg_grad(fn):
    return lambda tf: _grad_of(tf, lambda x: fn(tf, x), MAT)


CASES.update({f"linalg {name}": linalg_value(f) for name, f in LINALG.items()})
# (TF has no gradient for the LU factorization itself: no "grad" case for lu_reconstruct(lu(x)))
CASES.update({f"linalg grad {name}": linalg_grad(f) for name, f in LINALG.items()
              if name != "lu_matrix_inverse of x"})
CASES.update({
    "lu": lambda tf: list(tf.linalg.lu(tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0],
                                                    [7.0, 8.0, 10.0]], tf.float64))),
    "lu batch": lambda tf: list(tf.linalg.lu(tf.constant(np.stack([SPD, MAT])))),
    "lu_matrix_inverse": lambda tf: tf.linalg.lu_matrix_inverse(*tf.linalg.lu(
        tf.constant(np.stack([SPD, MAT])))),
    "matrix_rank": lambda tf: [tf.linalg.matrix_rank(tf.constant([[1.0, 2.0], [2.0, 4.0]])),
                               tf.linalg.matrix_rank(tf.constant(np.stack([SPD, MAT])))],
    "logm": lambda tf: tf.linalg.logm(tf.constant(SPD.astype(np.complex128))),
    "matrix_square_root": lambda tf: tf.linalg.sqrtm(tf.constant(SPD, tf.float32)),
})

WORDS = ["a", "b", "c", "d"]


def _rag(tf, rows):
    return tf.ragged.constant(rows)


CASES.update({
    "strings ngrams": lambda tf: tf.strings.ngrams(tf.constant(WORDS), 2),
    "strings ngrams widths": lambda tf: tf.strings.ngrams(tf.constant(WORDS), [1, 3],
                                                          separator="_"),
    "strings ngrams ragged": lambda tf: tf.strings.ngrams(_rag(tf, [["a", "b", "c"], ["d"]]), 2),
    "strings ngrams short": lambda tf: tf.strings.ngrams(
        _rag(tf, [["a", "b", "c"], ["d"]]), 2, preserve_short_sequences=True),
    "strings ngrams pads": lambda tf: tf.strings.ngrams(tf.constant(WORDS), 3,
                                                        pad_values=("<s>", "</s>")),
    "strings ngrams pad width": lambda tf: tf.strings.ngrams(tf.constant(WORDS), 3,
                                                             pad_values="#", padding_width=1),
    "strings ngrams 2-d": lambda tf: tf.strings.ngrams(tf.constant([["a", "b"], ["c", "d"]]), 2),
    "strings unsorted_segment_join": lambda tf: tf.strings.unsorted_segment_join(
        ["a", "b", "c"], [1, 0, 1], 3, separator=":"),
    "strings unicode_transcode": lambda tf: tf.strings.unicode_transcode(
        ["h\u00e9llo"], "UTF-8", "UTF-16-BE"),
    "strings unicode_split_with_offsets": lambda tf: list(tf.strings.unicode_split_with_offsets(
        ["h\u00e9", "ab"], "UTF-8")),
})


def _sparse(tf, indices, values, shape):
    return tf.sparse.SparseTensor(indices, values, shape)


def _parts(sp):
    return [sp.indices, sp.values, sp.dense_shape]


def _sp_a(tf):
    return _sparse(tf, [[0, 0], [1, 2]], [1.0, 5.0], [2, 3])


def _sp_c(tf, values=(1.0, 2.0, 3.0)):
    return _sparse(tf, [[0, 0], [0, 2], [1, 1]], values, [2, 3])


def _sparse_softmax_grad(tf):
    v = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(tf.sparse.softmax(_sp_c(tf, v)).values * tf.constant([1.0, 2.0, 3.0]))
    return tape.gradient(y, v)


CASES.update({
    "sparse maximum": lambda tf: _parts(tf.sparse.maximum(_sp_a(tf), _sparse(
        tf, [[0, 0], [0, 1]], [3.0, -2.0], [2, 3]))),
    "sparse minimum": lambda tf: _parts(tf.sparse.minimum(_sp_a(tf), _sparse(
        tf, [[0, 0], [0, 1]], [3.0, -2.0], [2, 3]))),
    "sparse softmax": lambda tf: _parts(tf.sparse.softmax(_sp_c(tf))),
    "sparse softmax grad": _sparse_softmax_grad,
    "sparse split": lambda tf: [t for s in tf.sparse.split(sp_input=_sp_c(tf), num_split=2,
                                                          axis=1) for t in _parts(s)],
    "sparse reset_shape": lambda tf: [_parts(tf.sparse.reset_shape(_sp_c(tf), [4, 5])),
                                      _parts(tf.sparse.reset_shape(_sp_c(tf)))],
    "sparse bincount rows": lambda tf: _parts(tf.sparse.bincount(
        tf.constant([[1, 2, 2], [3, 1, 1]]), axis=-1)),
    "sparse bincount": lambda tf: _parts(tf.sparse.bincount(tf.constant([1, 2, 2, 5]),
                                                            minlength=7)),
})

X3 = np.arange(24.0).reshape(2, 3, 4) / 10
FREQ = np.array([[[1.0]], [[2.0]]]) * np.ones((2, 3, 4))
IMG5 = np.random.RandomState(0).rand(1, 2, 2, 5)
CTC_LOGITS = np.log(np.random.RandomState(1).dirichlet(np.ones(4), (5, 2)))


def _embedding_cases(tf):
    params = tf.constant(np.arange(12.0).reshape(4, 3), tf.float32)
    ids = _sparse(tf, [[0, 0], [0, 1], [1, 0]], tf.constant([1, 3, 2], tf.int64), [2, 2])
    weights = _sparse(tf, [[0, 0], [0, 1], [1, 0]], [1.0, 2.0, 0.5], [2, 2])
    out = []
    for combiner in ("sum", "mean", "sqrtn"):
        out += [tf.nn.embedding_lookup_sparse(params, ids, None, combiner=combiner),
                tf.nn.embedding_lookup_sparse(params, ids, weights, combiner=combiner)]
    holes = _sparse(tf, [[0, 0], [0, 1], [2, 0]], tf.constant([1, -1, 2], tf.int64), [3, 2])
    out += [tf.nn.safe_embedding_lookup_sparse(params, holes),
            tf.nn.safe_embedding_lookup_sparse(params, holes, default_id=0, combiner="sum")]
    return out


NN = {
    "weighted_moments": lambda tf, x: tf.concat(
        [tf.reshape(m, [-1]) for m in tf.nn.weighted_moments(x, [0, 1], tf.constant(FREQ))], 0),
    "lrn": lambda tf, x: tf.nn.lrn(tf.reshape(tf.cast(x, tf.float32), [1, 2, 3, 4]),
                                   depth_radius=1, bias=1.0, alpha=0.5, beta=0.75),
}


def nn_grad(fn):
    return lambda tf: _grad_of(tf, lambda x: fn(tf, x), X3)


def nn_value(fn):
    return lambda tf: fn(tf, tf.constant(X3))


CASES.update({f"nn {name}": nn_value(f) for name, f in NN.items()})
CASES.update({f"nn grad {name}": nn_grad(f) for name, f in NN.items()})
CASES.update({
    "nn lrn defaults": lambda tf: tf.nn.local_response_normalization(tf.constant(
        IMG5, tf.float32)),
    "nn collapse_repeated": lambda tf: list(tf.nn.collapse_repeated(
        tf.constant([[1, 1, 2, 2, 3], [4, 4, 4, 0, 0]]), tf.constant([5, 3]))),
    "nn max_pool_with_argmax": lambda tf: list(tf.nn.max_pool_with_argmax(
        tf.reshape(tf.range(16.0), [1, 4, 4, 1]), 2, 2, "VALID")),
    "nn max_pool_with_argmax batch same": lambda tf: list(tf.nn.max_pool_with_argmax(
        tf.constant(np.random.RandomState(2).rand(2, 5, 5, 2), tf.float32), 3, 2, "SAME",
        include_batch_in_index=True)),
    "nn ctc_greedy_decoder": lambda tf: (lambda d: _parts(d[0][0]) + [d[1]])(
        tf.nn.ctc_greedy_decoder(tf.constant(CTC_LOGITS, tf.float32), [5, 3])),
    "nn embedding_lookup_sparse": _embedding_cases,
})

_R = np.random.RandomState(5)
CONV_X = _R.randn(2, 5, 6, 3)
DW = _R.randn(3, 3, 3, 2)
PW = _R.randn(1, 1, 6, 4)
X1 = _R.randn(2, 5, 3)
F1 = _R.randn(3, 4, 3)

CONV = {
    "depthwise_conv2d": lambda tf, x: tf.nn.depthwise_conv2d(x, tf.constant(DW, x.dtype),
                                                             [1, 1, 1, 1], "SAME"),
    "depthwise_conv2d strided": lambda tf, x: tf.nn.depthwise_conv2d(
        x, tf.constant(DW, x.dtype), [1, 2, 2, 1], "VALID"),
    "separable_conv2d": lambda tf, x: tf.nn.separable_conv2d(
        x, tf.constant(DW, x.dtype), tf.constant(PW, x.dtype), [1, 1, 1, 1], "SAME"),
    "convolution": lambda tf, x: tf.nn.convolution(x, tf.constant(DW[..., :1], x.dtype),
                                                   padding="SAME"),
    "atrous_conv2d": lambda tf, x: tf.nn.atrous_conv2d(x, tf.constant(DW[:2, :2], x.dtype), 2,
                                                       "SAME"),
    "space_to_batch": lambda tf, x: tf.nn.space_to_batch(x, [2, 2], [[1, 0], [0, 0]]),
}


def conv_value(fn):
    return lambda tf: fn(tf, tf.constant(CONV_X, tf.float32))


def conv_grad(fn, dtype="float32"):
    return lambda tf: _grad_of(tf, lambda x: fn(tf, x), CONV_X.astype(dtype))


CASES.update({f"conv {name}": conv_value(f) for name, f in CONV.items()})
CASES.update({f"conv grad {name}": conv_grad(f) for name, f in CONV.items()})
CASES.update({
    "conv1d_transpose": lambda tf: tf.nn.conv1d_transpose(
        tf.constant(X1, tf.float32), tf.constant(F1, tf.float32), [2, 10, 4], 2),
    "conv_transpose 1-d": lambda tf: tf.nn.conv_transpose(
        tf.constant(X1, tf.float32), tf.constant(F1, tf.float32), [2, 10, 4], 2),
})

BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                  [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
BOX_SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)


def _boxes(tf):
    return tf.constant(BOXES), tf.constant(BOX_SCORES)


CASES.update({
    "image nms": lambda tf: tf.image.non_max_suppression(*_boxes(tf), 3, 0.5),
    "image nms score_threshold": lambda tf: tf.image.non_max_suppression(
        *_boxes(tf), 10, 0.5, score_threshold=0.4),
    "image nms with scores": lambda tf: list(tf.image.non_max_suppression_with_scores(
        *_boxes(tf), 10, 0.5)),
    "image soft nms": lambda tf: list(tf.image.non_max_suppression_with_scores(
        *_boxes(tf), 10, 1.0, soft_nms_sigma=0.5)),
    "image nms padded": lambda tf: list(tf.image.non_max_suppression_padded(
        *_boxes(tf), 5, 0.5, pad_to_max_output_size=True)),
    "image nms overlaps": lambda tf: tf.image.non_max_suppression_overlaps(
        tf.constant([[1, 0.7, 0.2], [0.7, 1, 0.1], [0.2, 0.1, 1.0]]), [0.9, 0.8, 0.7], 3, 0.5),
    "image nms traced": lambda tf: tf.function(
        lambda b, s: tf.image.non_max_suppression(b, s, 3, 0.5))(*_boxes(tf)),
    "image stateless flips": lambda tf: [
        tf.image.stateless_random_flip_left_right(tf.reshape(tf.range(12.0), [2, 2, 3]),
                                                  seed=(s, 2)) for s in range(4)] + [
        tf.image.stateless_random_flip_up_down(tf.reshape(tf.range(24.0), [2, 2, 2, 3]),
                                               seed=(3, s)) for s in range(3)],
    "image stateless brightness contrast": lambda tf: [
        tf.image.stateless_random_brightness(tf.ones([2, 2, 1]) * 0.5, 0.2, seed=(1, 2)),
        tf.image.stateless_random_contrast(tf.reshape(tf.range(12.0), [2, 2, 3]) / 12, 0.5,
                                           1.5, seed=(1, 2))],
    "image stateless saturation hue": lambda tf: [
        tf.image.stateless_random_saturation(tf.reshape(tf.range(12.0), [2, 2, 3]) / 12, 0.5,
                                             1.5, seed=(5, 6)),
        tf.image.stateless_random_hue(tf.reshape(tf.range(12.0), [2, 2, 3]) / 12, 0.2,
                                      seed=(5, 6))],
})
