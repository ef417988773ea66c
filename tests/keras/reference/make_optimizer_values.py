"""Records tf-keras 2.21's results for tests/keras/test_optimizers_keras2.py (TF_VALUES there).

Run with TensorFlow 2.21 and tf-keras installed (not tapeflow):
    python tests/keras/reference/make_optimizer_values.py
Each case: five apply_gradients steps on 0.5 * sum(A x^2) + sum(B x) from X0, float32 variables.
"""

import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

A = np.array([[1.0, 0.5, -2.0], [3.0, -0.25, 0.75]], np.float32)
B = np.array([[0.3, -1.2, 0.1], [-0.5, 0.8, 2.0]], np.float32)
X0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
FTRL_ALL = dict(learning_rate_power=-0.7, l1_regularization_strength=0.05,
                l2_regularization_strength=0.1, l2_shrinkage_regularization_strength=0.02,
                beta=0.3, initial_accumulator_value=0.2)
CASES = {  # name: (namespace, class, kwargs); the test builds the same optimizers
    "legacy_nadam": ("legacy", "Nadam", dict(learning_rate=0.1)),
    "legacy_adamax": ("legacy", "Adamax", dict(learning_rate=0.1)),
    "legacy_adadelta": ("legacy", "Adadelta", dict(learning_rate=1.0)),
    "legacy_ftrl": ("legacy", "Ftrl", dict(learning_rate=0.1)),
    "legacy_ftrl_all": ("legacy", "Ftrl", dict(learning_rate=0.1, **FTRL_ALL)),
    "nadam": ("", "Nadam", dict(learning_rate=0.1)),
    "adamax": ("", "Adamax", dict(learning_rate=0.1)),
    "adadelta": ("", "Adadelta", dict(learning_rate=1.0)),
    "ftrl": ("", "Ftrl", dict(learning_rate=0.1)),
    "adamw": ("", "AdamW", dict(learning_rate=0.1, weight_decay=0.05)),
    "adamw_amsgrad": ("", "AdamW", dict(learning_rate=0.1, weight_decay=0.05, amsgrad=True)),
    "adam": ("", "Adam", dict(learning_rate=0.1)),
    "rmsprop": ("", "RMSprop", dict(learning_rate=0.05, momentum=0.5, centered=True)),
    "adagrad": ("", "Adagrad", dict(learning_rate=0.1)),
    "sgd": ("", "SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
}


def run(opt, steps=5):
    x = tf.Variable(X0)
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(A * x * x) * 0.5 + tf.reduce_sum(B * x)
        opt.apply_gradients([(tape.gradient(loss, x), x)])
    return x.numpy()


for name, (namespace, cls, kwargs) in CASES.items():
    module = keras.optimizers.legacy if namespace == "legacy" else keras.optimizers
    print(f"    {name!r}: {run(getattr(module, cls)(**kwargs)).tolist()!r},")
