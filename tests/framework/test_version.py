"""Version checks that real programs make at their first line must pass."""

import importlib.metadata
import subprocess
import sys

import tapeflow as tf


def test_tensorflow_api_level_is_reported_where_programs_look():
    assert tf.__version__ == tf.version.VERSION == "2.21.0"
    assert tf.__version__ >= "2.0"
    major, minor, _ = (int(p) for p in tf.version.VERSION.split("."))
    assert (major, minor) >= (2, 4)
    assert tf.keras.__version__.startswith("2.")
    assert tf.version.GIT_VERSION.startswith("v2.21.0")
    assert tf.__git_version__ == tf.version.GIT_VERSION
    assert isinstance(tf.version.COMPILER_VERSION, str) and tf.version.COMPILER_VERSION
    assert tf.version.GRAPH_DEF_VERSION > 0


def test_tapeflow_release_is_kept_under_its_own_name_and_in_the_metadata():
    assert tf.version.TAPEFLOW_VERSION == importlib.metadata.version("tapeflow")
    assert tf.version.TAPEFLOW_VERSION != tf.version.VERSION


def test_build_info_says_cpu_only():
    info = tf.sysconfig.get_build_info()
    assert info["is_cuda_build"] is False and info["is_rocm_build"] is False


def test_a_program_that_asserts_the_version_runs():
    src = "import tapeflow as tf\nassert tf.__version__ >= '2.0', tf.__version__\nprint('ok')\n"
    out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
