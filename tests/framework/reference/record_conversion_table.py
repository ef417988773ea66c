"""Records how TensorFlow 2.21 converts mixed NumPy / Python / tensor operands of one op.
Run with the reference venv:
/work/tfenv/bin/python tests/framework/reference/record_conversion_table.py > \
    tests/framework/reference/conversion_table.json
Each row: op, the two operand kinds, and the result dtype or the error class TF raised.
"""

import json

import numpy as np
import tensorflow as tf

OPERANDS = {
    "np_f64": lambda s: np.ones(s, np.float64),
    "np_f32": lambda s: np.ones(s, np.float32),
    "np_f16": lambda s: np.ones(s, np.float16),
    "np_i32": lambda s: np.ones(s, np.int32),
    "np_i64": lambda s: np.ones(s, np.int64),
    "py_int": lambda s: 42,
    "py_float": lambda s: 1.5,
    "py_list_float": lambda s: np.ones(s).tolist(),
    "py_list_int": lambda s: np.ones(s, int).tolist(),
    "tf_f32": lambda s: tf.ones(s, tf.float32),
    "tf_f64": lambda s: tf.ones(s, tf.float64),
    "tf_i32": lambda s: tf.ones(s, tf.int32),
}
OPS = {
    "multiply": (tf.math.multiply, (2, 2), (2, 2)),
    "add": (tf.math.add, (2, 2), (2, 2)),
    "maximum": (tf.math.maximum, (2, 2), (2, 2)),
    "matmul": (tf.linalg.matmul, (2, 2), (2, 2)),
    "conv2d": (lambda x, f: tf.nn.conv2d(x, f, 1, "VALID"), (1, 3, 3, 1), (2, 2, 1, 1)),
}
SCALAR_OK = {"multiply", "add", "maximum"}

rows = []
for op_name, (fn, s0, s1) in OPS.items():
    for a in OPERANDS:
        for b in OPERANDS:
            if op_name not in SCALAR_OK and (a.startswith("py_") and "list" not in a
                                             or b.startswith("py_") and "list" not in b):
                continue
            try:
                out = fn(OPERANDS[a](s0), OPERANDS[b](s1))
                result = out.dtype.name
            except Exception as e:  # noqa: BLE001 - the class is what we record
                result = "error:" + type(e).__name__
            rows.append([op_name, a, b, result])
print(json.dumps(rows))
