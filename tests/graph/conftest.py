import pytest

from tapeflow.compat import v1


@pytest.fixture(autouse=True)
def _eager_after_each_test():
    """A test that switches to TF1 graph mode never leaks it into the next test."""
    yield
    v1.enable_eager_execution()
