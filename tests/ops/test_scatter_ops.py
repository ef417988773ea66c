"""scatter_nd and tensor_scatter_nd_*: forward vs NumPy, gradients, graph vs eager."""

import numpy as np

import tapeflow as tf
from tapeflow.testing import OpCase, op_table_tests

IDX = np.array([[0, 1], [2, 0], [0, 1]])
IDX_UNIQUE = np.array([[0, 1], [2, 0], [1, 2]])


def _ref(combine, idx):
    def ref(t, u):
        out = t.copy()
        for (i, j), v in zip(idx, u):
            out[i, j] = v if combine is None else combine(out[i, j], v)
        return out
    return ref


def _inputs(rng):
    return [rng.standard_normal((3, 3)), rng.standard_normal(3)]


CASES = [
    OpCase("scatter_nd", lambda u: tf.scatter_nd(IDX, u, [3, 3]),
           lambda u: _ref(np.add, IDX)(np.zeros((3, 3)), u),
           lambda rng: [rng.standard_normal(3)]),
    OpCase("update", lambda t, u: tf.tensor_scatter_nd_update(t, IDX_UNIQUE, u),
           _ref(None, IDX_UNIQUE), _inputs),
    OpCase("add", lambda t, u: tf.tensor_scatter_nd_add(t, IDX, u), _ref(np.add, IDX), _inputs),
    OpCase("sub", lambda t, u: tf.tensor_scatter_nd_sub(t, IDX, u), _ref(np.subtract, IDX),
           _inputs),
    OpCase("max", lambda t, u: tf.tensor_scatter_nd_max(t, IDX_UNIQUE, u),
           _ref(np.maximum, IDX_UNIQUE), _inputs),
    OpCase("min", lambda t, u: tf.tensor_scatter_nd_min(t, IDX_UNIQUE, u),
           _ref(np.minimum, IDX_UNIQUE), _inputs),
]

test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = op_table_tests(CASES)


def test_out_of_bounds_index_names_the_op():
    import pytest

    with pytest.raises(tf.errors.InvalidArgumentError, match="ScatterNd.*out of bounds"):
        tf.scatter_nd([[5]], [1.0], [3])
