"""Records TF 2.21's answers to the cases in ragged_op_cases.py. Run with the reference venv:

    /work/tfenv/bin/python tests/ragged/record_tf_ragged_ops.py
"""

import json
import os
import sys

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ragged_op_cases  # noqa: E402

out = {name: ragged_op_cases.run(tf, name) for name in ragged_op_cases.CASES}
with open(os.path.join(HERE, "fixtures", "tf_ragged_ops.json"), "w") as f:
    json.dump(out, f, indent=0, sort_keys=True)
    f.write("\n")
print("recorded", len(out), "cases")
