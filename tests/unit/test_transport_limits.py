"""Pending-connection refusals (server/transport/limits.py): counted, and reported in WARNINGs
that are rate-limited and name the limit and the addresses (issue 23 item 5). Pure code: the
times are given."""

from __future__ import annotations

from pushgrid.server.transport.limits import (
    REFUSAL_GATHER,
    REFUSAL_LOG_INTERVAL,
    PendingConnections,
)


def test_nothing_to_report_without_refusals() -> None:
    pending = PendingConnections(max_total=10, max_per_address=2)
    assert pending.admit("10.0.0.1")
    assert pending.report_due(100.0) is None
    assert pending.report(100.0) is None


def test_a_storm_is_one_warning_with_its_count_and_address() -> None:
    pending = PendingConnections(max_total=100, max_per_address=2)
    assert pending.admit("10.0.0.1")
    assert pending.admit("10.0.0.1")
    refused = [pending.admit("10.0.0.1") for _ in range(1475)]
    assert not any(refused)
    due = pending.report_due(100.0)
    assert due == 100.0 + REFUSAL_GATHER
    assert pending.report_due(100.5) is None  # given once: one call scheduled per report
    message = pending.report(due)
    assert message is not None
    assert "refused 1475 client connections with 503" in message
    assert "1475 above MaxPendingConnectionsPerAddress = 2" in message
    assert "0 above MaxPendingConnections = 100" in message
    assert message.endswith("by address: 10.0.0.1 1475")
    assert pending.report(due + 1) is None  # reported: nothing left


def test_further_warnings_come_at_most_once_per_interval() -> None:
    pending = PendingConnections(max_total=1, max_per_address=1)
    assert pending.admit("a")
    assert not pending.admit("b")
    first = pending.report_due(0.0)
    assert first is not None
    assert pending.report(first) is not None
    assert not pending.admit("b")
    second = pending.report_due(first + 0.1)
    assert second == first + REFUSAL_LOG_INTERVAL
    message = pending.report(second)
    assert message is not None
    assert "1 above MaxPendingConnections = 1" in message  # the total was reached


def test_the_most_refused_addresses_are_named_first_and_the_rest_counted() -> None:
    pending = PendingConnections(max_total=1000, max_per_address=1)
    hosts = [f"10.0.0.{i}" for i in range(8)]
    for host in hosts:
        assert pending.admit(host)
    for rank, host in enumerate(hosts):
        for _ in range(10 - rank):
            assert not pending.admit(host)
    due = pending.report_due(5.0)
    assert due is not None
    message = pending.report(due)
    assert message is not None
    assert "by address: 10.0.0.0 10, 10.0.0.1 9, 10.0.0.2 8, 10.0.0.3 7, 10.0.0.4 6" in message
    assert message.endswith("and 3 more")
