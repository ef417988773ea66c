"""Shared pytest configuration: a bounded hypothesis profile so the suite stays fast on 2 cores."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "tapeflow", max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile("tapeflow")


def pytest_configure(config):
    """Every graph the suite optimizes is verified before and after each optimizer pass."""
    from tapeflow.graph.passes import pipeline

    pipeline.VERIFY_EACH_PASS = True
