"""Optimizers given tf.IndexedSlices gradients reach tf-keras 2.21's values (recorded by
reference/record_sparse_gradients.py): duplicate indices add up; untouched rows keep their
value under plain SGD."""

import json
from pathlib import Path

import numpy as np
import pytest

import tapeflow as tf

REF = json.loads((Path(__file__).parent / "reference" / "sparse_gradients.json").read_text())


@pytest.mark.parametrize("case", sorted(REF["results"]))
def test_indexed_slices_gradients_match_tf_keras(case):
    entry = REF["results"][case]
    var = tf.Variable(np.array(REF["start"], np.float32))
    opt = getattr(tf.keras.optimizers, case.split("_")[0])(learning_rate=0.1, **entry["kwargs"])
    for values, indices in REF["steps"]:
        grad = tf.IndexedSlices(tf.constant(values), tf.constant(indices), tf.constant([4, 2]))
        opt.apply_gradients([(grad, var)])
    np.testing.assert_allclose(var.numpy(), entry["value"], rtol=1e-6, atol=1e-6)


def test_plain_sgd_leaves_untouched_rows():
    start = np.arange(8, dtype=np.float32).reshape(4, 2)
    var = tf.Variable(start)
    grad = tf.IndexedSlices(tf.ones([2, 2]), tf.constant([3, 3]), tf.constant([4, 2]))
    tf.keras.optimizers.SGD(0.5).apply_gradients([(grad, var)])
    np.testing.assert_array_equal(var.numpy()[:3], start[:3])
    np.testing.assert_array_equal(var.numpy()[3], start[3] - 1.0)
