import pytest

import tapeflow.graph  # noqa: F401  (registers tf.function until the top level imports it)
from tapeflow.compat import v1


@pytest.fixture(autouse=True)
def _eager_after_each_test():
    yield
    v1.enable_eager_execution()
