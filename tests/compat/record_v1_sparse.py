"""Records TF 2.21's tf.compat.v1.train optimizers on the cases of v1_sparse_cases.py (eager
TF2 with resource variables, and TF1 graphs in a Session: TF's sparse kernels). Run with the
reference venv:

    /work/tfenv/bin/python tests/compat/record_v1_sparse.py
"""

import json
import os
import sys

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import v1_sparse_cases  # noqa: E402

out = {name: v1_sparse_cases.run(tf, name) for name in v1_sparse_cases.CASES}
out.update({f"graph_{name}": v1_sparse_cases.run_graph(tf, name)
            for name in v1_sparse_cases.CASES})
with open(os.path.join(HERE, "fixtures", "v1_sparse.json"), "w") as f:
    json.dump(out, f, indent=0, sort_keys=True)
    f.write("\n")
print("recorded", len(out), "cases")
