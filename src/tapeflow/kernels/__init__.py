"""Heavy array code behind the nn ops: convolution, pooling, batch norm (NumPy + numba).

Kernels see only NumPy arrays; the op definitions in ``tapeflow.ops`` wrap them. Each module
has a NumPy path that always works and, when numba is installed, a compiled path for the loops
that NumPy cannot express without extra passes over memory.
"""
