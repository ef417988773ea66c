"""Record tf-keras 2.21's mixed precision behaviour for tests/keras/test_mixed_precision.py.

Run with the reference venv: /work/tfenv/bin/python make_mixed_precision_values.py
(writes mixed_precision_values.json next to this file).
"""

import json
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tf_keras import mixed_precision as mp  # noqa: E402

out = {}
out["policies"] = {name: [mp.Policy(name).compute_dtype, mp.Policy(name).variable_dtype]
                   for name in ("float32", "float16", "bfloat16", "float64", "mixed_float16",
                                "mixed_bfloat16")}
out["dense_config_dtype"] = keras.layers.Dense(3, dtype="mixed_float16").get_config()["dtype"]
out["dense_config_dtype_float32"] = keras.layers.Dense(3).get_config()["dtype"]

# dynamic loss scaling: a non-finite step, then finite ones with growth every 2 steps
v = tf.Variable([1.0, 2.0])
opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic_growth_steps=2)
steps = []
for g in ([np.inf, 1.0], [1.0, 1.0], [1.0, 1.0], [np.nan, 0.0], [0.5, 0.5]):
    opt.apply_gradients([(tf.constant(g, tf.float32), v)])
    steps.append({"grad": [str(x) for x in g], "var": v.numpy().tolist(),
                  "loss_scale": float(opt.loss_scale.numpy()),
                  "counter": int(opt.dynamic_counter.numpy()),
                  "iterations": int(opt.iterations.numpy())})
out["lso_steps"] = steps
out["lso_config"] = {k: v for k, v in opt.get_config().items() if k != "inner_optimizer"}
out["scaled_loss"] = float(opt.get_scaled_loss(tf.constant(2.0)).numpy())
out["unscaled_grad"] = float(opt.get_unscaled_gradients([tf.constant(4.0)])[0].numpy())

# a mixed Dense layer: float16 output of float16-rounded inputs and weights
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
dense = keras.layers.Dense(2, dtype="mixed_float16",
                           kernel_initializer=keras.initializers.Constant(
                               np.linspace(-1, 1, 8).reshape(4, 2)),
                           bias_initializer="ones")
y = dense(x)
out["dense_input"] = x.tolist()
out["dense_output_float16"] = y.numpy().astype(np.float32).tolist()
out["dense_output_dtype"] = y.dtype.name
out["softmax_float32_dtype"] = keras.layers.Activation("softmax", dtype="float32")(y).dtype.name

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "mixed_precision_values.json"), "w") as f:
    json.dump(out, f, indent=1)
