"""The op library. Importing this package registers every op and its public names."""

from tapeflow.ops import (
    array_ops,
    control_flow_ops,
    conv_ops,
    creation_ops,
    functional_ops,
    fused_ops,
    gather_ops,
    indexing_ops,
    linalg_ops,
    math_ops,
    nn_ops,
    operators,
    random_generator,
    random_ops,
    reduce_ops,
    scatter_ops,
    script_ops,
    segment_ops,
    state_ops,
    stateless_random,
)
