"""nn_ops: see issue #2."""
