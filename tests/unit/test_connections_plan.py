"""benchmarks/connections.py: how connections are spread over processes and source addresses,
and how the processes' latency histograms are merged."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import itertools

import connections
from wsload import new_histogram


def test_a_plan_covers_every_connection_once_within_every_limit() -> None:
    shares = connections.plan(100_000, 6, 19_500, 28_000)
    assert sum(share.count for share in shares) == 100_000
    assert all(share.count <= 19_500 for share in shares)
    starts = [share.start for share in shares]
    assert starts == sorted(starts)
    assert starts[0] == 0
    for share, following in itertools.pairwise(shares):
        assert share.start + share.count == following.start
    per_address: dict[str, int] = {}
    for share in shares:
        assert sum(count for _, count in share.sources) == share.count
        for address, count in share.sources:
            per_address[address] = per_address.get(address, 0) + count
    assert per_address == {
        "127.0.2.1": 28_000,
        "127.0.2.2": 28_000,
        "127.0.2.3": 28_000,
        "127.0.2.4": 16_000,
    }


def test_a_share_crossing_an_address_boundary_uses_both_addresses() -> None:
    shares = connections.plan(10, 2, 10, 3)
    assert shares[0].sources == (("127.0.2.1", 3), ("127.0.2.2", 2))
    assert shares[1].sources == (("127.0.2.2", 1), ("127.0.2.3", 3), ("127.0.2.4", 1))


def test_uneven_counts_differ_by_at_most_one() -> None:
    counts = [share.count for share in connections.plan(19_001, 4, 19_000, 28_000)]
    assert counts == [4751, 4750, 4750, 4750]


@pytest.mark.parametrize(
    ("n", "processes", "per_process", "per_address", "words"),
    [
        (40_000, 2, 19_500, 28_000, "--processes 3"),
        (10, 11, 10, 10, "--processes 11"),
        (10, 1, 10, 30_000, "--per-address"),
        (0, 1, 10, 10, "-n"),
        (254 * 2 + 1, 1, 1000, 2, "more than 254"),
    ],
)
def test_plans_that_cannot_fit_are_refused_by_name(
    n: int, processes: int, per_process: int, per_address: int, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        connections.plan(n, processes, per_process, per_address)


def test_the_command_line_refuses_a_plan_naming_the_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stop:
        connections.parse(
            ["--port", "1", "-n", "30000", "--processes", "1", "--per-process", "19000"]
        )
    assert stop.value.code == 2
    assert "--processes 2" in capsys.readouterr().err


def test_latency_of_several_processes_is_merged_before_the_percentiles() -> None:
    fast, slow = new_histogram(), new_histogram()
    for _ in range(98):
        fast.record_value(1000)  # 1 ms
    for _ in range(2):
        slow.record_value(50_000)  # 50 ms
    summary = connections.latency_summary([fast.encode(), slow.encode()])
    assert summary["samples"] == 100
    assert summary["p50_ms"] == pytest.approx(1.0, rel=0.01)
    assert summary["p99_ms"] == pytest.approx(50.0, rel=0.01)
    assert connections.latency_summary([new_histogram().encode()]) == {"samples": 0}


def test_hot_connections_are_spread_over_every_process() -> None:
    shares = connections.plan(1000, 4, 1000, 28_000)
    hot = [
        sum(connections.is_hot(i, 1000, 100) for i in range(s.start, s.start + s.count))
        for s in shares
    ]
    assert hot == [25, 25, 25, 25]
    assert sum(connections.is_hot(i, 1001, 1000) for i in range(1001)) == 1000
    assert not any(connections.is_hot(i, 10, 0) for i in range(10))
    # 250 cold messages sent (connections 0-249 of share 0) and 7 hot ones to 25 connections
    assert connections.share_expected(shares[0], 1000, 100, 250, 7) == 250 + 25 * 7
    assert connections.share_expected(shares[1], 1000, 100, 250, 7) == 25 * 7
