"""Shared fixtures of the unit tests (``spark``, the run's one Spark session, is in
tests/spark_timeouts.py: the integration tests use it too)."""

from __future__ import annotations

import ssl
from typing import Any

import pytest
from natsserver import nats_url as nats_url  # the session fixture, shared


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: uses the session-wide local SparkSession")


@pytest.fixture
def ssl_contexts_built(monkeypatch: pytest.MonkeyPatch) -> list[ssl.SSLContext]:
    """Every ``ssl.create_default_context()`` made while the test runs (httpx makes one per
    client unless given one: the CA bundle loaded again, up to 0.5 s of a loaded event loop)."""
    built: list[ssl.SSLContext] = []
    original = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(original(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    return built
