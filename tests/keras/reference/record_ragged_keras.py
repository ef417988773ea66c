"""Records tf-keras 2.21's results of the cases in ../ragged_cases.py. Run with the reference venv:

    /work/tfenv/bin/python tests/keras/reference/record_ragged_keras.py
"""

import json
import os
import sys

import tensorflow as tf
import tf_keras as keras

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import ragged_cases  # noqa: E402

results = {}
for name, case in ragged_cases.CASES.items():
    keras.backend.clear_session()
    tf.random.set_seed(0)
    results[name] = case(tf, keras)
with open(os.path.join(HERE, "ragged_keras.json"), "w") as f:
    json.dump(results, f, indent=0, sort_keys=True)
    f.write("\n")
print("recorded", len(results), "cases")
