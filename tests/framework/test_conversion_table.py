"""Mixed NumPy / Python / tensor operands convert as TensorFlow 2.21 converts them: the first
tensor's dtype wins, else the first operand's; NumPy arrays are cast to it; a Python float that
meets an integer dtype is a TypeError. Table recorded by reference/record_conversion_table.py."""

import json
from pathlib import Path

import numpy as np
import pytest

import tapeflow as tf

TABLE = json.loads((Path(__file__).parent / "reference" / "conversion_table.json").read_text())

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
ERRORS = {"TypeError": TypeError, "InvalidArgumentError": tf.errors.InvalidArgumentError}


def _outcome(op, a, b):
    fn, s0, s1 = OPS[op]
    try:
        return fn(OPERANDS[a](s0), OPERANDS[b](s1)).dtype.name
    except (TypeError, ValueError) as e:
        for name, cls in ERRORS.items():
            if isinstance(e, cls):
                return "error:" + name
        raise


# TensorFlow's Python wrappers of these convert the first operand alone and raise where tapeflow
# applies the first-tensor rule (np_f64 + tf_f32 is an error there, float32 here): tapeflow is
# more permissive, never different where TensorFlow succeeds (a float meeting an int there is
# InvalidArgumentError in TensorFlow, TypeError here).
FIRST_OPERAND_OPS = {"add", "matmul"}
# dtypes tapeflow's kernels take (TensorFlow's CPU conv2d also runs int32): with another
# dtype the conversion is still TensorFlow's, and the kernel refuses it by name.
KERNEL_DTYPES = {"conv2d": {"float16", "float32", "float64"}}


@pytest.mark.parametrize("op", sorted(OPS))
def test_conversion_matches_tensorflow(op):
    # TensorFlow's conv2d fails on a Python-list input (AttributeError: no .shape): not a rule
    rows = [r for r in TABLE if r[0] == op and r[3] != "error:AttributeError"]
    assert len(rows) >= 80
    wrong = [(a, b, want, _outcome(op, a, b)) for _, a, b, want in rows]
    allowed = KERNEL_DTYPES.get(op)
    if allowed:
        refused = [w for w in wrong if w[2] not in allowed and not w[2].startswith("error:")]
        assert all(w[3] == "error:InvalidArgumentError" for w in refused), refused
        wrong = [w for w in wrong if w not in refused]
    wrong = [w for w in wrong if w[2] != w[3] and not (
        op in FIRST_OPERAND_OPS and w[2].startswith("error:") and (
            not w[3].startswith("error:") or w[3] == "error:TypeError"))]
    assert not wrong, f"{len(wrong)} of {len(rows)} differ (a, b, tf, tapeflow): {wrong[:12]}"


def test_traced_function_converts_the_same():
    f = tf.function(lambda x: tf.math.multiply(x, np.ones(2, np.float64)))
    assert f(tf.ones(2, tf.float32)).dtype == tf.float32
