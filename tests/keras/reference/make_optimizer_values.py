"""Records tf-keras 2.21's results for tests/keras/test_optimizers_keras2.py (TF_VALUES there).

Run with TensorFlow 2.21 and tf-keras installed (not tapeflow):
    python tests/keras/reference/make_optimizer_values.py
Each case: five apply_gradients steps on 0.5 * sum(A x^2) + sum(B x) from X0, float32 variables.
"""

import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from optimizer_cases import CASES, X0, A, B  # noqa: E402


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
