"""Shared fixtures for op tests."""

import pytest

import tapeflow


@pytest.fixture
def tf_function():
    """``tf.function``, for the graph-vs-eager column of op tests."""
    return tapeflow.function
