"""The plain functions behind the Watched subjects page."""

from __future__ import annotations

from pushgrid.console.pages.watched import HEADER, change_text, watched_rows

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
    assert row[1:5] == ["12", "24", "1,200.50", "4,000"]
    assert row[-2:] == ["7.50", "30"]
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
