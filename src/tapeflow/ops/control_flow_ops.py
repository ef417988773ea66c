"""control_flow_ops: see issue #2."""
