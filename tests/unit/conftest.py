"""Shared fixtures of the unit tests (``spark``, the run's one Spark session, is in
tests/spark_timeouts.py: the integration tests use it too)."""

from __future__ import annotations

import ssl
from typing import Any

import pytest
from natsserver import nats_url as nats_url  # the session fixture, shared

from pushgrid.server.cluster import membership


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


@pytest.fixture
def peerless_hello(monkeypatch: pytest.MonkeyPatch) -> None:
    """Links without a ClusterMembers list (``ClusterLink(..., None, None, [nats_url], ...)``)
    wait 0.05 s, not ``HELLO_WAIT`` (2 s), for the hellos of members already up.

    Without a list ``Membership`` cannot know that no member will answer, so each such link
    waited the whole 2 s on the suite's private nats-server: 256 of test_engine_contract's
    262 s (~130 engines). Without a list the answers change nothing (no fingerprint to
    compare); the hello check itself is tested with real clusters (test_cluster_guaranteed:
    a member with another list is refused). ``setattr`` raises if the constant is renamed.
    """
    monkeypatch.setattr(membership, "HELLO_WAIT", 0.05)
