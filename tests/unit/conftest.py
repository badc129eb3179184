"""Shared fixtures of the unit tests (``spark``, the run's one Spark session, is in
tests/spark_timeouts.py: the integration tests use it too)."""

from __future__ import annotations

import pytest
from natsserver import nats_url as nats_url  # the session fixture, shared


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: uses the session-wide local SparkSession")
