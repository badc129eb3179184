"""The plain functions behind the Hot subjects, Alerts and Live trace pages."""

from __future__ import annotations

from console.pages.alerts import banner, rule_body
from console.pages.hot import rankings_of, render_hot, sparkline
from console.pages.trace import KEEP, merge

DOCUMENT = {
    "cluster": {"rankings": {"messages_in": [{"subject": "/a/b", "value": 3.0, "error": 0.5}]}},
    "members": [{"member": "m1", "rankings": {"messages_in": [{"subject": "/m/1", "value": 1.0}]}}],
}


def test_sparkline_scales_to_the_maximum() -> None:
    assert sparkline([]) == ""
    assert sparkline([0, 0]) == "▁▁"
    assert sparkline([0, 5, 10]) == "▁▅█"


def test_rankings_of_cluster_and_member() -> None:
    assert rankings_of(DOCUMENT, "cluster")["messages_in"][0]["subject"] == "/a/b"
    assert rankings_of(DOCUMENT, "m1")["messages_in"][0]["subject"] == "/m/1"
    assert rankings_of(DOCUMENT, "nobody") == {}
    cards = render_hot(rankings_of(DOCUMENT, "cluster"))
    assert [getattr(card, "id", None) for card in cards] == [
        "hot-messages_in",
        "hot-messages_out",
        "hot-bytes_out",
        "hot-subscribers",
    ]
    assert "/a/b" in repr(cards[0])


def test_banner_shows_only_firing_alerts() -> None:
    alerts = [
        {
            "state": "firing",
            "severity": "critical",
            "summary": "X on m1",
            "rule": "X",
            "target": "m1",
        },
        {"state": "pending", "severity": "info", "summary": "Y", "rule": "Y", "target": "m1"},
    ]
    shown = banner(alerts)
    assert len(shown) == 1
    assert "X on m1" in repr(shown[0])
    assert banner([]) == []


def test_rule_body_fills_defaults() -> None:
    body = rule_body({"name": " Busy ", "indicator": "connected_users", "threshold": 5})
    assert body == {
        "name": "Busy",
        "indicator": "connected_users",
        "window": "current",
        "stat": "max",
        "comparison": ">",
        "threshold": 5,
        "for": 0,
        "severity": "warning",
        "scope": "member",
    }


def test_trace_buffer_is_bounded() -> None:
    kept = [{"index": n} for n in range(KEEP)]
    merged = merge(kept, [{"index": KEEP - 1}, {"index": KEEP}, {"index": KEEP + 1}])
    assert len(merged) == KEEP
    assert merged[-1] == {"index": KEEP + 1}
    assert merged[0] == {"index": 2}
    assert [m["index"] for m in merge([], [{"index": 0}])] == [0]
