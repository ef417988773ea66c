"""Records tf-keras 2.21's ``tf.keras.backend`` results for tests/keras/test_backend.py.

Run with TensorFlow 2.21 and tf-keras installed (not tapeflow):
    python tests/keras/reference/make_backend_values.py
Prints a dict literal: the test's TF_VALUES (each case's result rounded to 6 digits). The
test imports CASES and the inputs from here, so both evaluate the same expressions.
"""

import os

import numpy as np

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
P = np.array([[0.2, 0.7, 0.1], [0.6, 0.3, 0.1]], np.float32)
T = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
CASES = {  # name: expression over K, X, P, T (the test evaluates the same source)
    "mean_axis1": "K.mean(X, axis=1)",
    "sum_keep": "K.sum(X, axis=0, keepdims=True)",
    "max_all": "K.max(X)",
    "std_axis0": "K.std(X, axis=0)",
    "var_all": "K.var(X)",
    "sqrt_neg": "K.sqrt(X)",
    "clip": "K.clip(X, -0.5, 1.0)",
    "clip_inverted": "K.clip(X, 1.0, -0.5)",
    "pow": "K.pow(K.abs(X), 1.5)",
    "relu_all": "K.relu(X, alpha=0.1, max_value=1.2, threshold=0.3)",
    "softmax": "K.softmax(X)",
    "l2_normalize": "K.l2_normalize(X, axis=1)",
    "binary_ce": "K.binary_crossentropy(T, P)",
    "categorical_ce": "K.categorical_crossentropy(T, P)",
    "sparse_ce": "K.sparse_categorical_crossentropy(K.argmax(T), P)",
    "batch_flatten": "K.batch_flatten(K.reshape(X, (2, 3, 1)))",
    "switch": "K.switch(K.greater(X, 0.0), X, K.zeros_like(X))",
    "dot": "K.dot(X, K.transpose(X))",
    "concatenate": "K.concatenate([X, P])",
    "elu": "K.elu(X, alpha=0.5)",
    "softsign": "K.softsign(X)",
    "hard_sigmoid": "K.hard_sigmoid(X * 4.0)",
    "cos_sin": "K.cos(X) + K.sin(P)",
    "cumsum": "K.cumsum(X, axis=1)",
    "cumprod": "K.cumprod(X)",
    "batch_dot_2d": "K.batch_dot(X, P)",
    "batch_dot_3d": "K.batch_dot(K.reshape(X, (2, 3, 1)), K.reshape(P, (2, 1, 3)))",
    "batch_dot_axes": "K.batch_dot(K.reshape(X, (2, 3, 1)), K.reshape(P, (2, 3, 1)), axes=1)",
    "permute": "K.permute_dimensions(K.reshape(X, (2, 3, 1)), (0, 2, 1))",
    "repeat": "K.repeat(X, 2)",
    "repeat_elements": "K.repeat_elements(X, 2, axis=1)",
    "reverse": "K.reverse(X, axes=1)",
    "tile": "K.tile(X, (2, 1))",
    "temporal_padding": "K.temporal_padding(K.reshape(X, (2, 3, 1)), (1, 2))",
    "spatial_2d_padding": "K.spatial_2d_padding(K.reshape(X, (1, 2, 3, 1)))",
    "one_hot": "K.one_hot(K.argmax(P), 3)",
    "arange": "K.arange(1, 7, 2)",
    "in_top_k": "K.cast(K.in_top_k(P, K.argmax(T), 1), 'float32')",
    "bias_add": "K.bias_add(X, K.constant([1.0, 2.0, 3.0]))",
    "conv2d": "K.conv2d(K.reshape(X, (1, 2, 3, 1)), K.ones((2, 2, 1, 1)), padding='same')",
    "pool2d": "K.pool2d(K.reshape(X, (1, 2, 3, 1)), (2, 2), padding='same', pool_mode='avg')",
    "batch_norm": "K.batch_normalization(X, K.mean(X, 0), K.var(X, 0), P[0], P[1])",
    "resize_images": "K.resize_images(K.reshape(X, (1, 2, 3, 1)), 2, 1, 'channels_last')",
    "greater_equal": "K.cast(K.greater_equal(X, 0.5), 'float32')",
}

if __name__ == "__main__":
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tf_keras as keras

    K = keras.backend
    X, P, T = (K.constant(a) for a in (X, P, T))
    values = {name: np.round(np.asarray(eval(src)).astype(np.float64), 6).tolist()
              for name, src in CASES.items()}
    print("TF_VALUES = {")
    for name, value in values.items():
        print(f"    {name!r}: {value!r},")
    print("}")
    print("STATE =", {"floatx": K.floatx(), "epsilon": K.epsilon(),
                      "image_data_format": K.image_data_format(),
                      "learning_phase": K.learning_phase(),
                      "int_shape": K.int_shape(K.zeros((2, 3)))})
