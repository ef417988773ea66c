"""tapeflow: write models eagerly like NumPy, run them as optimized graphs.

The TensorFlow-2-style public surface. Everything is defined in the subpackages and registered
here (``tapeflow.math.add`` etc. come from ``@export`` next to each op's definition).
"""

from tapeflow import version
from tapeflow.version import VERSION as __version__

__git_version__ = version.GIT_VERSION
__compiler_version__ = version.COMPILER_VERSION

import os as _os

# OpenBLAS worker threads otherwise spin long after each GEMM and starve the numba loops that
# run between GEMMs in conv kernels (measured: 8 ms vs 0.4 ms per loop). Only effective when
# tapeflow is imported before NumPy; a user's own setting wins.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import warnings as _warnings

# Like TensorFlow, kernels return inf/nan silently (log(0), exp overflow); NumPy would warn from
# inside tapeflow's kernels. Scoped to tapeflow's own modules, so user NumPy code still warns.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tapeflow(\.|$)")

from tapeflow import (
    audio,
    compat,
    data,
    datasets,
    distribute,
    feature_column,
    functional_ops,  # tf.map_fn, tf.scan, tf.switch_case, ... (above graph control flow)
    image,
    io,
    keras,
    keras_root_aliases,  # tf.constant_initializer and friends
    ops,  # registers every op under tf.*, tf.math.*, tf.nn.*, ...
    profiler,
    ragged,  # after ops: dispatch_for_api wraps the exported op functions
    saved_model,
    sparse,
    strings,
    summary,
    sysconfig,
    train,
)
from tapeflow import elementwise_dispatch as _elementwise_dispatch  # tf.experimental.dispatch_*
from tapeflow import testing_api as _testing_api  # tf.test
from tapeflow.framework import config as _config  # tf.config devices, tf.device
from tapeflow.framework import dtypes, errors, nest
from tapeflow.framework import extension_type as _extension_type  # tf.experimental
from tapeflow.framework import threads as _threads
from tapeflow.framework import variable_creator as _variable_creator  # tf.variable_creator_scope
from tapeflow.framework.constant import constant, convert_to_tensor
from tapeflow.framework.context import executing_eagerly, name_scope
from tapeflow.framework.dtypes import (
    DType,
    as_dtype,
    bfloat16,
    bool,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
)
from tapeflow.framework.module import Module
from tapeflow.framework.shapes import TensorShape
from tapeflow.framework.tape import GradientTape, UnconnectedGradients, custom_gradient
from tapeflow.framework.tensor import Tensor, is_tensor
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.framework.variable import Variable, VariableAggregation, VariableSynchronization
from tapeflow.graph import function as _function_module  # tf.function, tf.config.*
from tapeflow.io import example_pb as _example_pb
from tapeflow.kernels import heap as _heap  # noqa: F401  (keeps activation buffers mapped)

_threads.pin_blas()  # the thread policy: BLAS on one thread, tapeflow owns the cores

# tf.train.Example and friends are protobuf messages defined with the TFRecord reader
for _name in ("Example", "Features", "Feature", "BytesList", "FloatList", "Int64List",
              "SequenceExample", "FeatureList", "FeatureLists"):
    setattr(train, _name, getattr(_example_pb, _name))
del _name

# tf.compat.v1.summary: TF1's FileWriter and summary ops (tapeflow.summary.v1)
from tapeflow.summary import v1 as _summary_v1

compat.v1.summary = _summary_v1

# TensorFlow 2's short names for Keras modules: the same module objects, loaded on first use.
_KERAS_ALIASES = ("optimizers", "initializers", "losses", "metrics")


def __getattr__(name: str):
    if name in _KERAS_ALIASES:
        module = getattr(keras, name)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'tapeflow' has no attribute {name!r}")

# tf.distribute's names that live in other namespaces
train.ClusterSpec = distribute.ClusterSpec
if not hasattr(data.experimental, "AutoShardPolicy"):
    data.experimental.AutoShardPolicy = distribute.AutoShardPolicy
