"""The Delivery page's latency and loss card (console/pages/delivery_latency.py): every number it
shows is the admin API's, per scope; its chart keeps the page's reads, gaps as gaps."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dash.development.base_component import Component

from pushgrid.admin_api.schemas_delivery import (
    ClusterDelivery,
    DeliveryLatency,
    LatencySummary,
    MemberDelivery,
    PatternDelivery,
)
from pushgrid.console.figures import latency_figure
from pushgrid.console.pages.delivery_latency import (
    KEEP,
    extend_history,
    render_latency,
    render_legs,
)
from pushgrid.ops.delivery import LOSS_KINDS


def _summary(count: int, p50: float | None, p99: float | None) -> LatencySummary:
    return LatencySummary(count=count, p50=p50, p90=p99, p99=p99, p999=p99, buckets={31: count})


def _answer() -> dict[str, Any]:
    """An answer as the admin API serialises it: m1 read, m2 not, one watched pattern."""
    loss = {kind: 0 for kind in LOSS_KINDS} | {"gaps": 2, "resyncs": 1}
    pattern = PatternDelivery(pattern="/Stocks/*", latency=_summary(120, 0.0126, 0.0316), loss=loss)
    member = MemberDelivery(
        member="m1",
        reachable=True,
        window_seconds=60,
        latency=_summary(123, 0.0126, 0.0316),
        loss=loss,
        legs={"publish_ack": _summary(9, 0.0004, 0.002), "engine": _summary(0, None, None)},
        patterns=[pattern],
    )
    down = MemberDelivery(member="m2", reachable=False, error="not answering for 4 s")
    cluster = ClusterDelivery(
        members=1,
        latency=_summary(123, 0.0126, 0.0316),
        loss=loss,
        loss_total=loss,
        legs={},
        patterns=[pattern],
    )
    answer = DeliveryLatency(at=datetime.now(UTC), cluster=cluster, members=[member, down])
    return answer.model_dump(mode="json")


def _rows(component: Component) -> dict[str, dict[str, Any]]:
    """``data-row`` -> {``data-column``: ``data-value``} of a rendered table (and its texts)."""
    rows: dict[str, dict[str, Any]] = {}
    for tr in component.children[1].children:  # Thead, Tbody
        key = str(getattr(tr, "data-row", ""))
        cells: dict[str, Any] = {"_text": []}
        for td in tr.children:
            child = td.children
            column = getattr(child, "data-column", None)
            if column is not None:
                value = getattr(child, "data-value")
                cells[column] = None if value == "" else float(value)
            cells["_text"].append(child if isinstance(child, str) else child.children)
        rows[key] = cells
    return rows


def test_every_scope_shows_the_api_numbers() -> None:
    answer = _answer()
    rows = _rows(render_latency(answer))
    assert list(rows) == ["cluster", "member:m1", "member:m2", "pattern:/Stocks/*"]
    m1 = answer["members"][0]
    for column in ("p50", "p90", "p99", "p999"):
        assert rows["member:m1"][column] == m1["latency"][column]
        assert rows["cluster"][column] == answer["cluster"]["latency"][column]
    assert rows["member:m1"]["count"] == 123
    assert rows["pattern:/Stocks/*"]["count"] == 120
    assert {k: rows["cluster"][k] for k in LOSS_KINDS} == answer["cluster"]["loss"]
    assert rows["cluster"]["_text"][0] == "cluster (1 member)"
    # a member that cannot be read says why and shows no number
    assert rows["member:m2"]["_text"][1] == "not answering for 4 s"
    assert set(rows["member:m2"]) == {"_text"}
    assert rows["member:m1"]["_text"][4] == "31.6 ms"  # p99, the one formatter


def test_legs_per_readable_member() -> None:
    rows = _rows(render_legs(_answer()))
    assert list(rows) == ["member:m1"]
    assert rows["member:m1"]["publish_ack"] == 0.002
    assert rows["member:m1"]["_text"][1] == "0.4 ms / 2 ms"
    assert "engine" not in rows["member:m1"]  # no latency in the window: a dash, not 0


def test_history_keeps_the_reads_with_gaps_and_a_bound() -> None:
    answer = _answer()
    points = extend_history(None, answer, 100.0)
    assert points == [
        {
            "t": 100.0,
            "cluster": [0.0126, 0.0316],
            "member:m1": [0.0126, 0.0316],
            "pattern:/Stocks/*": [0.0126, 0.0316],
        }
    ]
    answer["members"][0]["latency"]["count"] = 0  # nothing reported in m1's window
    points = extend_history(points, answer, 102.0)
    assert "member:m1" not in points[-1]
    many = [{"t": float(t)} for t in range(KEEP + 50)]
    assert len(extend_history(many, answer, 1e6)) == KEEP
    assert extend_history(many, answer, 1e6)[-2] == {"t": float(KEEP + 49)}


def test_the_chart_draws_milliseconds_and_says_when_it_is_empty() -> None:
    empty = latency_figure([{"t": 1.0}])
    assert "no latency reported yet" in empty.layout.annotations[0].text
    points = extend_history(None, _answer(), 100.0)
    points = extend_history(points, _answer(), 102.0)
    figure = latency_figure(points)
    names = [trace.name for trace in figure.data]
    assert names[:4] == ["cluster p99", "cluster p50", "m1 p99", "m1 p50"]
    assert list(figure.data[0].y) == [31.6, 31.6]
    assert figure.layout.yaxis.type == "log"


def test_the_demo_provider_has_delivery_windows_the_statistics_page_renders() -> None:
    """``python -m console --demo`` shows the Statistics page's delivery section too: every
    scope, series and window, percentiles from the buckets it lists (in order)."""
    from pushgrid.console.dev_provider import DemoProvider
    from pushgrid.console.pages.statistics_delivery import render_delivery_windows
    from pushgrid.metrics.window_spec import WINDOW_NAMES
    from pushgrid.ops.delivery import percentiles, text_counts

    answer = DemoProvider().delivery_windows()
    keys = {(w.scope, w.series, w.window) for w in answer.items}
    assert len(keys) == len(answer.items) == 3 * 3 * len(WINDOW_NAMES)
    for w in answer.items:
        counts = text_counts(w.buckets)
        assert w.count == sum(counts) > 0
        assert percentiles(counts) == {"p50": w.p50, "p90": w.p90, "p99": w.p99, "p999": w.p999}
        assert w.p50 is not None
        assert w.p999 is not None
        assert w.p50 <= w.p999
    text = str(render_delivery_windows(answer, "cluster"))
    assert "leg:fanout" in text
    assert "member" in text
    assert "11 gaps, 2 resyncs, 11 recovered" in text  # the 15mo window's made-up loss
    assert "none" in text  # the legs report no loss


def test_loss_text_says_none_or_each_kind_seen() -> None:
    from pushgrid.console.pages.statistics_delivery import loss_text

    assert loss_text({"gaps": 0, "duplicates": 0}) == "none"
    assert loss_text({"gaps": 1200, "recovery_failed": 1}) == "1,200 gaps, 1 recovery failed"
