"""``tf.sysconfig``: facts about how this tapeflow was built (a pure-Python, CPU-only package)."""

from tapeflow.version import get_build_info

__all__ = ["get_build_info"]
