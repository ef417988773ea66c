"""Records TF 2.21's losses and gradients for linalg_grad_cases.py:
/work/tfenv/bin/python tests/ops/record_tf_linalg_grads.py"""

import json
import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import linalg_grad_cases as cases  # noqa: E402

out = {}
for name in cases.CASES:
    loss, g = cases.gradient(tf, name)
    out[name] = {"loss": loss, "grad": g.ravel().tolist()}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_linalg_grads.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote", path)
