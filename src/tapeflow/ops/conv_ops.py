"""conv_ops: see issue #2."""
