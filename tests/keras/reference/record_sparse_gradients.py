"""Records tf-keras 2.21's results of applying tf.IndexedSlices gradients (duplicate indices,
different rows each step) with the default optimizers. Run with the reference venv:
/work/tfenv/bin/python tests/keras/reference/record_sparse_gradients.py > \
    tests/keras/reference/sparse_gradients.json
"""

import json

import numpy as np
import tensorflow as tf
import tf_keras as keras

STEPS = [([[1.0, 2.0], [3.0, 4.0], [0.5, 0.5]], [0, 2, 0]),
         ([[-1.0, 1.0], [2.0, 0.0], [1.0, 1.0]], [1, 1, 3])]
CASES = {"SGD": {}, "SGD_momentum": {"momentum": 0.9},
         "SGD_nesterov": {"momentum": 0.9, "nesterov": True}, "Adam": {},
         "Adam_amsgrad": {"amsgrad": True}, "RMSprop": {},
         "RMSprop_centered": {"momentum": 0.5, "centered": True}, "Adagrad": {}, "Adamax": {},
         "Nadam": {}, "Adadelta": {}, "Ftrl": {}, "AdamW": {"weight_decay": 0.1},
         "SGD_clipnorm": {"clipnorm": 1.0}, "Adam_global_clipnorm": {"global_clipnorm": 1.0},
         "SGD_clipvalue": {"clipvalue": 0.7}}

out = {"steps": STEPS, "start": np.arange(8.0).reshape(4, 2).tolist(), "results": {}}
for case, kwargs in CASES.items():
    var = tf.Variable(np.arange(8, dtype=np.float32).reshape(4, 2))
    opt = getattr(keras.optimizers, case.split("_")[0])(learning_rate=0.1, **kwargs)
    for values, indices in STEPS:
        opt.apply_gradients([(tf.IndexedSlices(tf.constant(values), tf.constant(indices),
                                               tf.constant([4, 2])), var)])
    out["results"][case] = {"kwargs": kwargs, "value": var.numpy().tolist()}
print(json.dumps(out))
