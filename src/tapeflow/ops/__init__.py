"""The op library. Importing this package registers every op and its public names."""

from tapeflow.framework import backprop as _backprop
from tapeflow.framework.tensor import Tensor as _Tensor
from tapeflow.framework.variable import Variable as _Variable
from tapeflow.ops import (
    api_extras,
    array_ops,
    bitwise_set_ops,
    candidate_sampling,
    complex_ops,
    control_flow_ops,
    conv3d_ops,
    conv_extras,
    conv_ops,
    creation_ops,
    debug_ops,
    fractional_pool,
    fused_matmul,
    fused_ops,
    gather_ops,
    gradient_registry,
    indexing_ops,
    jacobian_ops,
    linalg_extras,
    linalg_ops,
    linear_operator,
    linear_operator_structured,
    lookup_ops,
    math_ops,
    matrix_ops,
    misc_ops,
    moving_average,
    nn_extras,
    nn_ops,
    nn_sweep,
    numpy_api,
    numpy_extras,
    operators,
    quantization_ops,
    random_generator,
    random_ops,
    recurrent_ops,
    reduce_ops,
    root_extras,
    sampled_losses,
    scatter_ops,
    script_ops,
    segment_ops,
    signal_extras,
    signal_nd,
    signal_ops,
    sobol,
    special_functions,
    special_math_ops,
    state_ops,
    stateless_random,
    variable_updates,
    volume_patches,
)
from tapeflow.ops import indexed_slices as _indexed_slices

# the reverse-mode walker (framework, below this layer) adds gradients with the op library's ops
variable_updates.install(_Variable, _Tensor)  # v[0, 1].assign(x), v.scatter_*
complex_ops.install_conjugate_gradients()  # TF's complex-gradient convention
_backprop.install(add=_indexed_slices.add_gradients, zeros_like=array_ops.zeros_like,
                  ones_like=array_ops.ones_like, zeros=array_ops.zeros, cast=math_ops.cast,
                  slices=_indexed_slices.IndexedSlices, dense=_indexed_slices.dense)
