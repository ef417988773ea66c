"""The glibc heap settings that keep activation buffers mapped between training steps."""

import platform

import pytest

from tapeflow.kernels import heap


def test_opt_out_leaves_the_allocator_alone(monkeypatch):
    monkeypatch.setenv("TAPEFLOW_KEEP_HEAP", "0")
    assert heap.keep_heap() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the settings are glibc's")
def test_glibc_accepts_the_settings():
    assert heap.KEPT is True
    assert heap.keep_heap() is True
