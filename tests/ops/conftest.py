"""Shared fixtures for op tests: the graph column runs only once ``tapeflow.function`` exists."""

import pytest

import tapeflow


@pytest.fixture
def tf_function():
    function = getattr(tapeflow, "function", None)
    if function is None:
        pytest.skip("tapeflow.function (graph mode) is not built yet")
    return function
