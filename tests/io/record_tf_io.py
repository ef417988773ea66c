"""Records TensorFlow 2.21's answers to the cases in io_cases.py (run with the reference venv).

    /work/tfenv/bin/python tests/io/record_tf_io.py
"""

import json
import os
import sys

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import io_cases  # noqa: E402

out = {table: {name: io_cases.run(tf, case) for name, case in cases.items()}
       for table, cases in io_cases.TABLES.items()}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_io.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")
print("wrote", path)
