"""Complex gradients, TensorFlow's convention (conjugated: the gradient of a real loss L(z) is
dL/dRe(z) + i dL/dIm(z)); cases shared by the recorder (record_tf_complex_grads.py, run under
TF 2.21) and test_complex_grads.py. Each case maps (tf, z, w) to a target; the gradient of the
target with respect to z (complex128 [2, 2]) is recorded."""

import numpy as np

Z = np.array([[1 + 2j, 0.5 - 1j], [-0.3 + 0.4j, 2 - 0.5j]])
W = np.array([[0.2 - 1j, 1.5 + 0.3j], [0.7 + 0.7j, -1 + 2j]])


def _loss(tf, t):
    """A real loss of a complex tensor (weights mix real and imaginary parts)."""
    w = tf.constant(W)
    return tf.reduce_sum(tf.math.real(t * w)) + tf.reduce_sum(tf.math.imag(t) ** 2)


CASES = {
    "mul": lambda tf, z: _loss(tf, z * z),
    "div": lambda tf, z: _loss(tf, 1.0 / z + z / tf.constant(W)),
    "matmul": lambda tf, z: _loss(tf, tf.matmul(z, tf.constant(W))),
    "matmul adjoint": lambda tf, z: _loss(tf, tf.matmul(z, z, adjoint_b=True)),
    "exp log": lambda tf, z: _loss(tf, tf.exp(z) + tf.math.log(z)),
    "trig": lambda tf, z: _loss(tf, tf.sin(z) * tf.cos(z) + tf.tanh(z)),
    "sqrt square": lambda tf, z: _loss(tf, tf.sqrt(z) + tf.square(z) + tf.math.rsqrt(z)),
    "reciprocal": lambda tf, z: _loss(tf, tf.math.reciprocal(z)),
    "pow": lambda tf, z: _loss(tf, tf.pow(z, tf.constant(W))),
    "abs": lambda tf, z: tf.reduce_sum(tf.abs(z)),
    "reduce_prod": lambda tf, z: _loss(tf, tf.reduce_prod(z, axis=0)),
    "complex target": lambda tf, z: z * z,
    "inverse": lambda tf, z: _loss(tf, tf.linalg.inv(z)),
    "det": lambda tf, z: _loss(tf, tf.linalg.det(z)),
    "sigmoid": lambda tf, z: _loss(tf, tf.sigmoid(z)),
    "conj real imag": lambda tf, z: _loss(tf, tf.math.conj(z) * tf.complex(tf.math.real(z),
                                                                            tf.math.imag(z))),
}


def gradient(tf, case):
    z = tf.constant(Z)
    with tf.GradientTape() as tape:
        tape.watch(z)
        target = CASES[case](tf, z)
    return tape.gradient(target, z).numpy()
