"""Core objects: dtypes, shapes, tensors, variables, dispatch, the gradient tape, errors."""
