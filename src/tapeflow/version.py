"""``tf.version``: which TensorFlow API level tapeflow implements, and tapeflow's own release.

Programs check ``tf.__version__ >= "2.0"`` or parse ``tf.version.VERSION`` to decide which API they
may call, so those report the TensorFlow release whose API tapeflow's conformance tests target.
tapeflow's own release (the package metadata's version) is ``TAPEFLOW_VERSION``.
"""

from __future__ import annotations

import platform

VERSION = "2.21.0"             # the TensorFlow 2 API level that tapeflow's conformance targets
KERAS_VERSION = "2.21.0"       # tf-keras (Keras 2) API level of tapeflow.keras
TAPEFLOW_VERSION = "0.1.0"     # tapeflow's own release; equals the package metadata's version
GIT_VERSION = f"v{VERSION}-tapeflow-{TAPEFLOW_VERSION}"
COMPILER_VERSION = platform.python_compiler()   # tapeflow builds nothing natively: Python's own
GRAPH_DEF_VERSION = 2474       # TensorFlow 2.21's GraphDef version, which ours follow
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0


def get_build_info() -> dict[str, object]:
    """``tf.sysconfig.get_build_info()``: a CPU-only build with no CUDA, ROCm or TensorRT."""
    return {
        "cpu_compiler": COMPILER_VERSION,
        "is_cuda_build": False,
        "is_rocm_build": False,
        "is_tensorrt_build": False,
    }
