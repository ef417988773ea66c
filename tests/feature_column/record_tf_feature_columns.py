"""Records TF 2.21's DenseFeatures output for fc_cases.py into expected_tf.json.

Run with the reference venv (TF 2.21 + tf-keras):
    /work/tfenv/bin/python tests/feature_column/record_tf_feature_columns.py
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
import tf_keras

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fc_cases  # noqa: E402

layer = tf_keras.layers.DenseFeatures(fc_cases.columns(tf.feature_column, tf_keras.initializers,
                                                             tf.int64))
layer(fc_cases.FEATURES)   # builds the embedding tables
for weight in layer.weights:
    weight.assign(fc_cases.table_values(weight.shape))
out = layer(fc_cases.FEATURES).numpy()
record = {
    "names": [c.name for c in layer._feature_columns],
    "weights": [w.name for w in layer.weights],
    "output": np.round(out.astype(np.float64), 6).tolist(),
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected_tf.json")
with open(path, "w") as f:
    json.dump(record, f, indent=1)
print("wrote", path, out.shape)
