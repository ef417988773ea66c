"""random_ops: see issue #2."""
