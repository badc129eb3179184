"""The failover benchmark's bookkeeping (benchmarks/failover.py): what counts as lost, duplicated,
out of order, and how outages and recoveries are measured."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import failover

ACKED = {"1.0": ("e1", 1), "2.0": ("e1", 2), "3.1": ("e1", 3)}


def test_everything_received_in_order_is_clean() -> None:
    got = [("1.0", "e1", 1, "update"), ("2.0", "e1", 2, "update"), ("3.1", "e1", 3, "recovered")]
    check = failover.check_subject(ACKED, set(), set(), got)
    assert check == failover.SubjectCheck(expected=3, received=3)


def test_missing_twice_and_reordered_messages_are_counted() -> None:
    got = [("2.0", "e1", 2, "update"), ("1.0", "e1", 1, "update"), ("2.0", "e1", 2, "update")]
    check = failover.check_subject(ACKED, set(), set(), got)
    assert (check.lost, check.duplicated, check.out_of_order) == (1, 1, 1)


def test_unconfirmed_attempts_are_neither_lost_nor_duplicates() -> None:
    got = [
        ("1.0", "e1", 1, "update"),
        ("3.0", "e1", 2, "update"),  # timed out, yet stored: 'maybe'
        ("2.0", "e1", 3, "update"),  # stored at another seq than the publisher was told
        ("3.1", "e1", 4, "update"),
        ("9.0", "e1", 5, "update"),  # refused, yet delivered
        ("7.7", "e1", 6, "update"),  # never published
        ("3.1", "e1", 4, "snapshot"),  # a resync's snapshot repeats a message
    ]
    check = failover.check_subject(ACKED, {"3.0"}, {"9.0"}, got)
    assert check.lost == check.duplicated == check.out_of_order == 0
    assert (check.maybe_received, check.refused_received, check.unknown_received) == (1, 1, 1)
    assert check.mismatched == 2
    assert check.snapshots == 1


def test_a_new_epoch_restarts_the_order() -> None:
    acked = {"1.0": ("e1", 5), "2.0": ("e2", 1)}
    got = [("1.0", "e1", 5, "update"), ("2.0", "e2", 1, "update")]
    assert failover.check_subject(acked, set(), set(), got).out_of_order == 0


def test_recovery_starts_at_the_first_server_down_of_an_outage() -> None:
    events: list[tuple[float, str, str | None, str | None]] = [
        (10.0, "server_down", None, None),
        (10.5, "server_down", None, None),  # a failed reconnect attempt: same outage
        (11.0, "server_up", None, None),
        (11.2, "data_sync", "/a", "recovered"),
        (11.4, "data_sync", "/b", "up_to_date"),
        (11.5, "data_sync", "/a", "recovered"),  # a later gap recovery, not this outage's
        (20.0, "server_down", None, None),
        (21.0, "server_up", None, None),
        (21.5, "data_sync", "/a", "recovered"),
    ]
    assert failover.recovery_times(events) == pytest.approx([1.2, 1.4, 1.5])


def test_syncs_before_any_outage_are_not_recoveries() -> None:
    assert failover.recovery_times([(1.0, "data_sync", "/a", "up_to_date")]) == []


def test_longest_gap_counts_the_edges_of_the_window() -> None:
    assert failover.longest_gap(10.0, 20.0, [9.0, 10.5, 11.0, 16.0, 25.0]) == 5.0
    assert failover.longest_gap(10.0, 20.0, []) == 10.0
    assert failover.longest_gap(10.0, 20.0, [10.1, 19.0]) == pytest.approx(8.9)


def test_nearest_rank_percentiles() -> None:
    assert failover.percentile([], 50) is None
    assert failover.percentile([4.0, 0.1], 50) == 0.1
    values = [float(v) for v in range(1, 101)]
    assert failover.percentile(values, 50) == 50.0
    assert failover.percentile(values, 99) == 99.0
    assert failover.percentile(values, 100) == 100.0


def test_stream_leader_from_jsz() -> None:
    jsz = {
        "account_details": [
            {"stream_detail": [{"name": "OTHER", "cluster": {"leader": "x"}}]},
            {"stream_detail": [{"name": "PUSHGRID", "cluster": {"leader": "pushgrid-m2"}}]},
        ]
    }
    assert failover.stream_leader_in(jsz) == "pushgrid-m2"
    assert failover.stream_leader_in({"account_details": None}) is None
    leaderless = {"account_details": [{"stream_detail": [{"name": "PUSHGRID", "cluster": {}}]}]}
    assert failover.stream_leader_in(leaderless) is None
