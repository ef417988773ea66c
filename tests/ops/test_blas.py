"""BLAS pinned to one thread inside kernels, also when kernels overlap on several threads."""

import threading

import pytest

from tapeflow.kernels import blas

pytestmark = pytest.mark.skipif(blas._set_threads is None, reason="needs NumPy's OpenBLAS")


def test_a_kernel_leaving_does_not_unpin_one_still_running_on_another_thread():
    blas._set_threads(2)
    first_in, second_in, seen = threading.Event(), threading.Event(), []

    @blas.single_threaded
    def first():  # enters first, leaves while `second` is still inside
        first_in.set()
        second_in.wait(5)

    def run_first():
        first()

    @blas.single_threaded
    def second():
        second_in.set()
        worker.join(5)
        seen.append(blas._get_threads())

    worker = threading.Thread(target=run_first)
    worker.start()
    first_in.wait(5)
    second()
    assert seen == [1]
    assert blas._get_threads() == 2
