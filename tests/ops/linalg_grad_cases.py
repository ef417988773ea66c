"""Gradients of tf.linalg decompositions, shared by the recorder (record_tf_linalg_grads.py,
run under TF 2.21) and test_linalg_grads.py. Each case maps (tf, x) to a scalar loss; losses of
eigenvectors use their squared moduli (independent of each vector's phase or sign)."""

import numpy as np

RNG = np.random.RandomState(7)
INPUTS = {"tall": RNG.randn(5, 3), "square": RNG.randn(4, 4), "wide": RNG.randn(3, 5),
          "batch": RNG.randn(2, 3, 3)}
W = {k: RNG.randn(*v.shape) for k, v in INPUTS.items()}


def _weighted(tf, t, key):
    """sum(t * w), w: fixed weights shaped like t."""
    shape = tuple(t.shape.as_list())
    w = W[key]
    w = w.reshape(w.shape[:-2] + (-1,))[..., :int(np.prod(shape[-2:]))]
    return tf.reduce_sum(t * tf.constant(w.reshape(w.shape[:-1] + shape[-2:])))


def _qr(key, full=False):
    def loss(tf, x):
        q, r = tf.linalg.qr(x, full_matrices=full)
        return _weighted(tf, q, key) + _weighted(tf, r * r, key)
    return loss


def _eig(key):
    def loss(tf, x):
        e, v = tf.linalg.eig(x)
        moduli = tf.math.real(v * tf.math.conj(v))  # column j belongs to e[j]: the loss must
        rows = tf.constant(W[key][..., :, :1])         # not depend on the eigenvalues' order
        return tf.reduce_sum(tf.math.real(e) * 0.7 - tf.math.imag(e) ** 2 * 0.2) + \
            tf.reduce_sum(moduli * rows * tf.expand_dims(tf.math.real(e), -2))
    return loss


def _eigh(key):
    def loss(tf, x):
        e, v = tf.linalg.eigh(x + tf.linalg.matrix_transpose(x))
        return tf.reduce_sum(e * tf.range(1.0, e.shape[-1] + 1, dtype=e.dtype)) + \
            _weighted(tf, v * v, key)
    return loss


CASES = {"qr tall": ("tall", _qr("tall")), "qr square": ("square", _qr("square")),
         "qr square full": ("square", _qr("square", True)), "qr wide": ("wide", _qr("wide")),
         "qr batch": ("batch", _qr("batch")), "eig square": ("square", _eig("square")),
         "eig batch": ("batch", _eig("batch")), "eigh square": ("square", _eigh("square")),
         "eigh batch": ("batch", _eigh("batch"))}


def gradient(tf, name):
    key, loss = CASES[name]
    x = tf.constant(INPUTS[key])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loss(tf, x)
    return float(y.numpy()), tape.gradient(y, x).numpy()
