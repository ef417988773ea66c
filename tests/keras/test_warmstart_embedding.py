"""tf.keras.utils.warmstart_embedding_matrix: shared words keep their rows, new words get
the initializer's; vocabularies from lists, tensors and files (values as tf-keras 2.21)."""

import numpy as np
import pytest

import tapeflow as tf

BASE = np.arange(12, dtype=np.float32).reshape(4, 3)


def test_shared_rows_are_copied_new_rows_initialized(tmp_path):
    got = tf.keras.utils.warmstart_embedding_matrix(["a", "b", "c", "d"],
                                                    ["x", "c", "a", "y", "d"], BASE, "zeros")
    want = np.zeros((5, 3), np.float32)
    want[[1, 2, 4]] = BASE[[2, 0, 3]]
    np.testing.assert_array_equal(got.numpy(), want)  # also tf_keras 2.21's result
    (tmp_path / "new.txt").write_text("d\nz\nb\n")
    from_file = tf.keras.utils.warmstart_embedding_matrix(
        tf.constant(["a", "b", "c", "d"]), str(tmp_path / "new.txt"), BASE,
        tf.keras.initializers.Constant(-1.0))
    # a tensor vocabulary holds bytes, a file's lines are str: no token is shared (as tf-keras)
    np.testing.assert_array_equal(from_file.numpy(), -np.ones((3, 3)))
    uniform = tf.keras.utils.warmstart_embedding_matrix(["a"], ["a", "q"], BASE[:1])
    np.testing.assert_array_equal(uniform.numpy()[0], BASE[0])
    assert np.all(np.abs(uniform.numpy()[1]) <= 0.05)  # Keras's 'uniform': U(-0.05, 0.05)


def test_bad_vocabularies_are_named(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        tf.keras.utils.warmstart_embedding_matrix(["a"], str(tmp_path / "missing.txt"), BASE)
    with pytest.raises(ValueError, match="at least one token"):
        tf.keras.utils.warmstart_embedding_matrix([], ["a"], BASE)
    with pytest.raises(ValueError, match="Instead type <class 'int'> was received"):
        tf.keras.utils.warmstart_embedding_matrix(3, ["a"], BASE)
