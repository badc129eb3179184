"""The plain functions behind the Hot subjects, Alerts and Live trace pages."""

from __future__ import annotations

from pushgrid.console.pages.alerts import banner, rule_body
from pushgrid.console.pages.hot import rankings_of, render_hot, spark_label, sparkline
from pushgrid.console.pages.member_trace import KEEP, merge
from pushgrid.console.pages.trace import advance

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


def test_hot_values_use_the_one_formatter_and_the_sparkline_says_what_it_shows() -> None:
    rankings = {
        "messages_in": [{"subject": "/a", "value": 28.5, "error": 0.5, "history": [1.0] * 60}],
        "bytes_out": [{"subject": "/a", "value": 1_597_465.0, "error": 0, "history": [1.0] * 12}],
        "subscribers": [{"subject": "/a", "value": 252.0, "error": 0}],
    }
    assert spark_label(rankings) == "last 30 s"  # 60 points held, the last 30 shown
    assert spark_label({"messages_in": [{"subject": "/a", "value": 1, "history": [1.0] * 7}]}) == (
        "last 7 s"
    )
    text = repr(render_hot(rankings))
    assert "'28.5'" in text
    assert "'± 0.5'" in text
    assert "'1.52 MiB'" in text
    assert "'252'" in text
    assert "252.00" not in text


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
        "clear_threshold": None,
        "clear_for": None,
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


def _view(trace_id: str, *indexes: int, status: str = "live") -> dict[str, object]:
    messages = [{"index": n} for n in indexes]
    next_index = indexes[-1] + 1 if indexes else 0
    return {"id": trace_id, "status": status, "dropped": 0, "next_index": next_index,
            "messages": messages}  # fmt: skip


def test_trace_state_follows_the_trace_last_opened() -> None:
    opened = {"id": "b", "status": "connecting", "error": None}
    fresh = advance(opened, None, None)
    assert fresh == {**opened, "after": -1, "dropped": 0, "messages": []}
    # a poll of the previous trace still in flight when Trace was clicked changes nothing
    old = {**opened, "id": "a", "after": 4, "dropped": 0, "messages": [{"index": 4}]}
    assert advance(opened, _view("a", 5, 6), old) == fresh
    live = advance(opened, _view("b", 0, 1), fresh)
    assert live is not None
    assert (live["status"], live["after"], len(live["messages"])) == ("live", 1, 2)
    # the same view again (combine called for another input) neither repeats nor loses messages
    assert advance(opened, _view("b", 0, 1), live) == live
    assert advance(opened, _view("b"), live) == {**live, "messages": live["messages"]}
    assert advance(None, _view("b", 2), live) is None  # stopped
    assert advance({"id": None}, None, live) is None
