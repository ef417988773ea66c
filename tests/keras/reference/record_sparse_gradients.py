"""Records tf-keras 2.21's results of applying tf.IndexedSlices gradients (duplicate indices,
different rows each step) with the optimizers of tf.keras.optimizers and of
tf.keras.optimizers.legacy (whose sparse kernels leave untouched rows and slots alone). Run with
the reference venv:
/work/tfenv/bin/python tests/keras/reference/record_sparse_gradients.py > \
    tests/keras/reference/sparse_gradients.json
"""

import json

import numpy as np
import tensorflow as tf
import tf_keras as keras

STEPS = [([[1.0, 2.0], [3.0, 4.0], [0.5, 0.5]], [0, 2, 0]),
         ([[-1.0, 1.0], [2.0, 0.0], [1.0, 1.0]], [1, 1, 3]),
         ([[0.5, -2.0], [1.5, 1.0]], [2, 3])]
FTRL_ALL = {"l1_regularization_strength": 0.05, "l2_regularization_strength": 0.1,
            "l2_shrinkage_regularization_strength": 0.02, "beta": 0.3,
            "learning_rate_power": -0.7}
SETTINGS = {"SGD": {}, "SGD_momentum": {"momentum": 0.9},
            "SGD_nesterov": {"momentum": 0.9, "nesterov": True}, "Adam": {},
            "Adam_amsgrad": {"amsgrad": True}, "RMSprop": {},
            "RMSprop_momentum": {"momentum": 0.5},
            "RMSprop_centered": {"momentum": 0.5, "centered": True}, "Adagrad": {},
            "Adagrad_initial": {"initial_accumulator_value": 0.5, "epsilon": 1e-3},
            "Adamax": {}, "Nadam": {}, "Adadelta": {}, "Ftrl": {}, "Ftrl_all": FTRL_ALL}
CASES = dict(SETTINGS, **{"AdamW": {"weight_decay": 0.1}, "Lion": {},
                          "Lion_betas": {"beta_1": 0.5, "beta_2": 0.8},
                          "SGD_clipnorm": {"clipnorm": 1.0},
                          "Adam_global_clipnorm": {"global_clipnorm": 1.0},
                          "SGD_clipvalue": {"clipvalue": 0.7}})
CASES.update({f"legacy.{name}": kwargs for name, kwargs in SETTINGS.items()})

out = {"steps": STEPS, "start": np.arange(8.0).reshape(4, 2).tolist(), "results": {}}
for case, kwargs in CASES.items():
    var = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
    namespace, _, name = case.rpartition(".")
    module = keras.optimizers.legacy if namespace else keras.optimizers
    opt = getattr(module, name.split("_")[0])(learning_rate=0.1, **kwargs)
    for values, indices in STEPS:
        opt.apply_gradients([(tf.IndexedSlices(tf.constant(values), tf.constant(indices),
                                               tf.constant([4, 2])), var)])
    out["results"][case] = {"kwargs": kwargs, "value": var.numpy().tolist()}
print(json.dumps(out))
