"""The plain functions behind the Watched subjects page."""

from __future__ import annotations

from typing import Any

from pushgrid.console.pages.watched import (
    HEADER,
    PATTERN_INDICATORS,
    change_text,
    render_stored,
    stored_windows,
    watched_rows,
)
from pushgrid.metrics.watched import WATCH_NAMES

INDICATORS = {
    "incoming_messages_per_second": {
        "current": 12.0,
        "unit": "messages/s",
        "windows": {"1m": {"avg": 7.5, "max": 12}, "15m": {"avg": 2.0, "max": 30}},
    },
    "outgoing_messages_per_second": {"current": 24.0, "unit": "messages/s", "windows": {}},
    "incoming_bytes_per_second": {"current": 1200.5, "unit": "bytes/s", "windows": {}},
    "outgoing_bytes_per_second": {"current": 4000.0, "unit": "bytes/s", "windows": {}},
}
TOTALS = {"messages_in_total": 1234, "messages_out_total": 2468}
DOCUMENT = {
    "cluster": [
        {
            "pattern": "/Stocks/*",
            "members": 2,
            "totals": TOTALS,
            "subscribers": 5,
            "current": {"incoming_messages_per_second": 12.0},
        }
    ],
    "members": [
        {
            "member": "m1",
            "patterns": [
                {
                    "pattern": "/Stocks/*",
                    "totals": TOTALS,
                    "subscribers": 3,
                    "indicators": INDICATORS,
                }
            ],
        }
    ],
}


def test_cluster_rows_sum_the_members() -> None:
    (row,) = watched_rows(DOCUMENT, "cluster")
    assert len(row) == len(HEADER)
    assert row[:2] == ["/Stocks/*", "12"]
    assert row[2] == "0"  # a rate no member reported
    assert row[5:8] == ["5", "1,234", "2,468"]


def test_member_rows_show_the_windows() -> None:
    (row,) = watched_rows(DOCUMENT, "m1")
    # the console's one formatter (issue 34: bytes were raw, "98,633")
    assert row[1:5] == ["12", "24", "1.17 KiB", "3.91 KiB"]
    assert row[-2:] == ["7.5", "30"]
    assert watched_rows(DOCUMENT, "nobody") == []


def test_change_text_says_what_each_member_did() -> None:
    answer = {
        "pattern": "/Stocks/*",
        "members": [
            {"member": "m1", "outcome": "watched"},
            {"member": "m2", "outcome": "already_watched"},
        ],
    }
    assert change_text(answer) == "/Stocks/*: watched on m1, already_watched on m2"
    assert change_text({"pattern": "/x/*", "members": []}) == "/x/*: no member"


def _item(scope: str, indicator: str, window: str, count: int, coverage: float) -> dict[str, Any]:
    return {
        "scope": scope,
        "indicator": indicator,
        "window": window,
        "as_of": "2026-11-25T04:00:00Z",
        "count": count,
        "coverage": coverage,
        "low_coverage": coverage < 0.9,
        "max": 9.0,
        "avg": 4.5,
        "stddev": 1.5,
        "computed_at": "2026-11-25T04:00:05Z",
        "run_id": 7,
        "age_seconds": 55.0,
        "stale": False,
    }


STORED = {
    "pattern": "/Stocks/*",
    "stale_after_seconds": 7200,
    "items": [
        _item("cluster", "incoming_messages_per_second", "1m", 60, 1.0),
        _item("cluster", "incoming_messages_per_second", "1h", 300, 300 / 3600),
        _item("node:m1", "subscribers", "1m", 60, 1.0),
    ],
}


def test_stored_windows_of_the_chosen_scope_with_partial_marks() -> None:
    cluster = stored_windows(STORED, "cluster")
    assert cluster is not None
    assert {(r.indicator, r.window) for r in cluster.rows} == {
        ("incoming_messages_per_second", "1m"),
        ("incoming_messages_per_second", "1h"),
    }
    member = stored_windows(STORED, "m1")
    assert member is not None
    assert [r.indicator for r in member.rows] == ["subscribers"]
    assert stored_windows(STORED, "m2") is None

    text = repr(render_stored("/Stocks/*", cluster, 1_795_579_300.0))
    assert "data-partial-windows='1h'" in text  # the coverage mark of the indicators' page
    for name in WATCH_NAMES:  # the six pattern indicators, not the seven
        assert f"data-indicator='{name}'" in text
    assert "connected_users" not in text
    assert PATTERN_INDICATORS == WATCH_NAMES
    assert "no stored windows" in repr(render_stored("/Stocks/*", None, 0.0))
