"""The console's plain page functions (render_*, plan_update, ...), the admin-API JSON readers
and the app's routing: no browser, no network."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, cast

import httpx
import pytest
from console_values import indicator, member, moments, stat_row
from dash.development.base_component import Component

from pushgrid.console import http_provider as hp
from pushgrid.console.app import PAGES, create_dash_app, href, nav, offered, page_for
from pushgrid.console.figures import trend_figure
from pushgrid.console.format import chart_time
from pushgrid.console.pages import overview, sessions, statistics, subjects, trends
from pushgrid.console.provider import (
    CLUSTER,
    ConsoleProvider,
    LiveOverview,
    LiveScope,
    ProviderError,
    SubjectView,
    WindowStatistics,
)
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.ops.api.cluster import ClusterMemberOut, ClusterOut, HealthReasonOut
from pushgrid.ops.api.history import HistoryOut, HistorySeriesOut
from pushgrid.ops.api.jobs import JobRunOut
from pushgrid.ops.api.live import LiveStats
from pushgrid.ops.api.sessions import SessionPage
from pushgrid.ops.api.statistics import WindowStatList
from pushgrid.ops.api.subjects import PublishOut, SnapshotOut
from pushgrid.ops.api.trends import TrendPointOut
from pushgrid.ops.statistics import TrendQuery


def _walk(component: Any) -> list[Component]:
    """Every component under ``component`` (itself included)."""
    if isinstance(component, list | tuple):
        return [c for child in component for c in _walk(child)]
    if not isinstance(component, Component):
        return []
    found = [component]
    children = getattr(component, "children", None)
    if children is not None:
        found += _walk(children)
    return found


def _props(component: Component) -> dict[str, Any]:
    """A component's properties, data-* attributes included."""
    props: dict[str, Any] = component.to_plotly_json()["props"]  # type: ignore[no-untyped-call]
    return props


def _with(component: Any, attribute: str) -> list[Component]:
    return [c for c in _walk(component) if attribute in _props(c)]


def _prop(component: Component, name: str) -> Any:
    return _props(component).get(name)


# --- statistics -----------------------------------------------------------------------------


def test_statistics_table_carries_every_written_number() -> None:
    rows = [
        stat_row(indicator, window, 60, 2.0 + i, 1.0 + i, 0.1 * i)
        for i, indicator in enumerate(INDICATOR_NAMES)
        for window in ("1m", "15mo")
    ]
    stats = WindowStatistics("node:a", 1000, None, False, 900.0, rows)
    table = statistics.render_table(stats)
    assert _prop(table, "data-scope") == "node:a"
    cells = {
        (_prop(c, "data-indicator"), _prop(c, "data-window"), _prop(c, "data-stat")): c
        for c in _with(table, "data-stat")
    }
    assert len(cells) == 7 * 12 * 3
    cell = cells[("incoming_messages_per_second", "15mo", "avg")]
    assert _prop(cell, "data-value") == repr(4.0)
    assert cell.children == "4"  # an integer reads as one, not 4.00
    big = stat_row("outgoing_bytes_per_second", "1h", 60, 1_597_465.0, 252.0, 0.5)
    table = statistics.render_table(WindowStatistics("node:a", 1000, None, False, 900.0, [big]))
    texts = {
        _prop(c, "data-stat"): c.children
        for c in _with(table, "data-stat")
        if _prop(c, "data-window") == "1h" and _prop(c, "data-indicator") == big.indicator
    }
    assert texts == {"max": "1.523 MiB", "avg": "252 B", "stddev": "0.5 B"}
    empty = cells[("incoming_messages_per_second", "5m", "avg")]
    assert _prop(empty, "data-value") == ""
    assert empty.children == "—"


def test_statistics_heat_and_picking() -> None:
    assert statistics.heat(None, 0, 1) == {}
    assert statistics.heat(5.0, 5.0, 5.0) == {}
    assert statistics.heat(10.0, 0.0, 10.0) == {"backgroundColor": "rgba(56, 189, 248, 0.220)"}
    stats = WindowStatistics("cluster", 1, None, False, None, [])
    assert statistics.pick([stats], "cluster") is stats
    assert statistics.pick([stats], "node:x") is None


def test_statistics_asof_marks_stale_results() -> None:
    stale = WindowStatistics("node:old", 1000, None, True, 900.0, [])
    banner = statistics.render_asof(stale, now=20000)
    assert _prop(banner, "data-stale") == "true"
    assert "asof-stale" in _prop(banner, "className")
    fresh = WindowStatistics("cluster", 19990, "2026-11-22T14:00:00+00:00", False, 900.0, [])
    banner = statistics.render_asof(fresh, now=20000)
    assert _prop(banner, "data-stale") == "false"
    assert _prop(banner, "data-as-of") == "19990"


# --- overview -------------------------------------------------------------------------------


def _live(ts: int, members: tuple[str, ...]) -> LiveOverview:
    scopes = {
        name: LiveScope(
            name,
            ts,
            {n: indicator(n, 3.0, {"1m": moments(60, 9.0, 3.0, 1.0)}) for n in INDICATOR_NAMES},
        )
        for name in members
    }
    cluster = LiveScope(CLUSTER, ts, {n: indicator(n, 3.0 * len(members)) for n in INDICATOR_NAMES})
    return LiveOverview([member(m) for m in members], cluster, scopes)


def _point(as_of: int, high: float, avg: float) -> TrendPointOut:
    """A trend point as ``GET /stats/trend`` answers it (an hour, whole coverage)."""
    return TrendPointOut(
        as_of=datetime.fromtimestamp(as_of, UTC),
        count=3600,
        coverage=1.0,
        max=high,
        avg=avg,
        stddev=1.0,
        run_id=None,
    )


def _history(until: int, members: tuple[str, ...], since: int = 0) -> HistoryOut:
    seconds = list(range(max(since, until - 9), until + 1))
    values: dict[str, list[float | None]] = {n: [3.0] * len(seconds) for n in INDICATOR_NAMES}
    values["outgoing_bytes_per_second"] = [2048.0] * len(seconds)
    return HistoryOut.model_validate(
        {
            "since": seconds[0] if seconds else since,
            "until": until,
            "retention": 3600,
            "indicators": INDICATOR_NAMES,
            "cluster": {"scope": CLUSTER, "seconds": seconds, "values": values},
            "members": [{"scope": name, "seconds": seconds, "values": values} for name in members],
        }
    )


class HistoryApi:
    """A provider's ``history`` and ``trend`` over fixed answers, recording what was asked."""

    def __init__(self, *answers: HistoryOut, stored: bool = True) -> None:
        self.answers = list(answers)
        self.asked: list[int | None] = []
        self.trends: list[tuple[str, str, str, int | None]] = []
        self.stored = stored  # whether the statistics store has trend points

    def history(self, since: int | None = None, until: int | None = None) -> HistoryOut:
        self.asked.append(since)
        return self.answers.pop(0)

    def trend(self, query: TrendQuery) -> list[TrendPointOut]:
        self.trends.append((query.scope, query.indicator, query.window, query.since))
        if not self.stored:
            return []
        return [_point(1000, 5e6, 4e6), _point(4600, 6e6, 5e6)]


def test_overview_builds_figures_first_then_extends_them() -> None:
    api = HistoryApi(_history(100, ("a", "b")), _history(100, ("a", "b")))
    first = overview.charts_update(api, "15m", None, 1000)  # type: ignore[arg-type]
    assert api.asked == [1000 - 900 + 1], "the whole range at once"
    figure = first.figures["connected_users"]
    assert figure is not None
    assert [trace.name for trace in figure.data] == ["Cluster", "a", "b"]
    assert len(figure.data[0].x) == 10
    assert first.extensions["connected_users"] is None
    assert first.state["last"] == {CLUSTER: 100, "a": 100, "b": 100}
    assert first.state["units"]["outgoing_bytes_per_second"] == (1024.0, "KiB")
    bytes_figure = first.figures["outgoing_bytes_per_second"]
    assert bytes_figure is not None
    assert bytes_figure.data[0].y[0] == 2.0, "in KiB, like the axis"

    assert not overview.needs_rebuild("15m", first.state)
    same = overview.charts_update(api, "15m", first.state, 150)  # type: ignore[arg-type]
    assert api.asked[-1] == 101, "only what the series lack"
    assert same.figures["connected_users"] is None
    assert same.extensions["connected_users"] is None  # no new second
    assert overview.history_since(1000, "15m", first.state, False) == 1000 - 120 + 1

    later = overview.plan_update(_history(101, ("a", "b"), since=101), "15m", first.state, False)
    extension = later.extensions["connected_users"]
    assert extension is not None
    assert extension[1] == [0, 1, 2]
    assert overview.needs_rebuild("1h", later.state), "range changed"

    gone = HistoryApi(_history(102, ("a",), since=102), _history(102, ("a",)))
    shrunk = overview.charts_update(gone, "15m", later.state, 160)  # type: ignore[arg-type]
    assert gone.asked == [102, 160 - 900 + 1], "a member went: the whole range again"
    assert shrunk.figures["connected_users"] is not None


def test_overview_rebuilds_when_a_byte_chart_outgrows_its_unit() -> None:
    first = overview.plan_update(_history(100, ("a",)), "5m", None, True)
    bigger = _history(101, ("a",), since=101)
    bigger.cluster.values["outgoing_bytes_per_second"] = [5e6]
    later = overview.plan_update(bigger, "5m", first.state, False)
    assert later.state["rebuild"] is True
    assert overview.needs_rebuild("5m", later.state)


def test_overview_beyond_the_history_reads_the_statistics_store() -> None:
    api = HistoryApi()
    update = overview.charts_update(api, "24h", None, 90_000)  # type: ignore[arg-type]
    assert {a[2] for a in api.trends} == {"1h"}
    assert {a[3] for a in api.trends} == {90_000 - 86_400}
    assert api.asked == [], "not the admin API's history"
    figure = update.figures["outgoing_bytes_per_second"]
    assert figure is not None
    assert [t.name for t in figure.data] == ["avg (1h)", "max (1h)"]
    assert figure.layout.yaxis.ticksuffix == " MiB"
    again = overview.charts_update(api, "24h", update.state, 90_010)  # type: ignore[arg-type]
    assert again.figures["connected_users"] is None, "redrawn every 5 minutes, not each round"
    assert overview.needs_rebuild("15m", again.state), "back to the history: a whole range"


def _annotations(figure: Any) -> list[str]:
    return [a.text for a in figure.layout.annotations]


def test_overview_long_ranges_say_why_empty_fill_from_history_and_span_the_range() -> None:
    """Issue 34: 24 h / 7 d showed seven empty charts with meaningless axes until the pipeline
    had points."""
    now = 700_000
    api = HistoryApi(_history(now, ("a",)), stored=False)
    update = overview.charts_update(api, "7d", None, now)  # type: ignore[arg-type]
    assert api.asked == [now - 7 * 86_400], "the admin API's history, asked once"
    figure = update.figures["connected_users"]
    assert figure is not None
    assert [t.name for t in figure.data] == ["Cluster"]
    assert len(figure.data[0].x) == 10, "the history's seconds, drawn"
    assert list(figure.layout.xaxis.range) == [chart_time(now - 7 * 86_400), chart_time(now)]
    assert _annotations(figure) == []
    assert any("admin API's history" in p for p in update.problems)

    empty = HistoryApi(_history(now, (), since=now + 1), stored=False)
    nothing = overview.charts_update(empty, "24h", None, now)  # type: ignore[arg-type]
    figure = nothing.figures["connected_users"]
    assert figure is not None
    (why,) = _annotations(figure)
    assert why.startswith("no data for the last 24 h yet")
    assert figure.layout.xaxis.visible is False, "no meaningless axes"

    stored = overview.charts_update(HistoryApi(), "24h", None, 90_000)  # type: ignore[arg-type]
    figure = stored.figures["connected_users"]
    assert figure is not None
    assert list(figure.layout.xaxis.range) == [chart_time(90_000 - 86_400), chart_time(90_000)]


def test_a_trend_spans_the_selected_range() -> None:
    """Issue 34: one trend point was drawn on an axis one millisecond wide."""
    point = _point(50_000, 5.0, 4.0)
    assert trends.trend_span(40_000, [point], 60_000.5) == (40_000, 60_000)
    assert trends.trend_span(None, [point], 60_000) == (50_000 - 3600, 60_000)
    figure = trend_figure([point], "connected_users", "1h", CLUSTER, (40_000, 60_000))
    assert list(figure.layout.xaxis.range) == [chart_time(40_000), chart_time(60_000)]


def test_overview_reports_members_down() -> None:
    live = _live(100, ("a",))
    live.members.append(member("b", "http://b", False, "connection refused"))
    assert overview.problems_of(live) == ["member b is down: connection refused"]
    cards = overview.render_members(live.members)
    assert [(_prop(c, "data-member"), _prop(c, "data-up")) for c in cards] == [
        ("a", "true"),
        ("b", "false"),
    ]
    reason = HealthReasonOut(code="member_down", member="b", text="member b is down")
    cluster = ClusterOut(
        mode="guaranteed", health="degraded", quorum=True, reasons=[reason], members=[]
    )
    health = overview.render_health(live.members, cluster)
    assert _prop(health, "data-health") == "degraded"
    assert _prop(overview.render_health(live.members), "data-health") == "unknown"


def test_overview_window_table_per_member() -> None:
    live = _live(100, ("a", "b"))
    table = overview.render_windows(
        "connected_users", overview.member_indicators(live, "connected_users")
    )
    cells = _with(table, "data-member")
    assert {_prop(c, "data-member") for c in cells} == {"a", "b"}
    max_1m = [
        c for c in cells if _prop(c, "data-window") == "1m" and _prop(c, "data-stat") == "max"
    ]
    assert [c.children for c in max_1m] == ["9", "9"]


# --- subjects, sessions, trends -------------------------------------------------------------


def _info(seq: int | None, epoch: str = "e1") -> SubjectView:
    snapshot = (
        None
        if seq is None
        else SnapshotOut(
            subject="/a/b", content=f"v{seq}", fields={"k": "v"}, epoch=epoch, seq=seq, ts=1000
        )
    )
    return SubjectView("/a/b", snapshot, {"m1": 2, "m2": 1})


def test_subject_log_and_arrival() -> None:
    log = subjects.next_log([], _info(1), now=10.0)
    assert [e["seq"] for e in log] == [1]
    assert subjects.next_log(log, _info(1), now=11.0) == log
    log = subjects.next_log(log, _info(2), now=12.0)
    assert [e["seq"] for e in log] == [1, 2]
    other = SubjectView("/x/y", None, {})
    assert subjects.next_log(log, other, now=13.0) == []

    sent = subjects.published_record(
        PublishOut(member="m1", subject="/a/b", result="ok", epoch="e1", seq=3), now=20.0
    )
    waiting, kept = subjects.arrival(sent, _info(2), now=20.5)
    assert _prop(waiting, "data-arrived") == "false"
    assert kept is None
    arrived, kept = subjects.arrival(sent, _info(3), now=20.5)
    assert _prop(arrived, "data-arrived") == "true"
    assert _prop(arrived, "data-took") == "0.500000"
    assert kept is not None
    assert kept["arrived"] == 20.5
    # issue 34: the time it took is frozen once seen, however long the page keeps watching
    later, again = subjects.arrival(kept, _info(4), now=95.0)
    assert _prop(later, "data-took") == "0.500000"
    assert again is None
    assert "arrived in 0.50 s" in str(later.children[1].children)
    assert _info(3).subscriber_count == 3


def test_sessions_disconnect_trigger() -> None:
    assert sessions.pending_from_trigger({"type": "x", "index": "m1|abc"}, 1) == {
        "member": "m1",
        "session": "abc",
    }
    assert sessions.pending_from_trigger({"type": "x", "index": "m1|abc"}, 0) is None
    assert sessions.pending_from_trigger("sessions-refresh", 1) is None


def test_trend_time_ranges() -> None:
    assert trends.time_range("24 h", now=100_000.5) == (100_000 - 86400, None)
    assert trends.time_range("all", now=100_000) == (None, None)


# --- admin API JSON -> values ---------------------------------------------------------------


def test_problem_documents_become_provider_errors() -> None:
    response = httpx.Response(
        502,
        json={
            "type": "urn:pushgrid:admin:member_unreachable",
            "title": "Bad Gateway",
            "status": 502,
            "detail": "connection refused",
            "member": "push-2",
        },
    )
    error = hp.problem(response)
    assert (error.status, error.title, error.detail) == (
        502,
        "Bad Gateway",
        "connection refused (member push-2)",
    )
    plain = hp.problem(httpx.Response(500, text="oops"))
    assert (plain.status, plain.detail) == (500, "oops")
    assert ProviderError(401, "Unauthorized").unauthorized


def test_live_overview_from_the_admin_api() -> None:
    data = {
        "at": "2026-11-22T14:00:05+00:00",
        "cluster": {
            "members_reachable": 1,
            "members_unreachable": 1,
            "indicators": [{"name": "connected_users", "current": 4.0}],
        },
        "members": [
            {
                "member": "a",
                "reachable": True,
                "sample_time": "2026-11-22T14:00:04+00:00",
                "indicators": [
                    {
                        "name": "connected_users",
                        "current": 4.0,
                        "windows": {"1m": {"max": 5.0, "avg": 4.0, "stddev": 0.5, "count": 60}},
                    }
                ],
            },
            {"member": "b", "reachable": False, "error": "refused", "indicators": []},
        ],
    }
    members = [member("a", "http://a"), member("b", "http://b", False, "refused")]
    live = hp.live_overview(members, LiveStats.model_validate(data))
    ts = int(datetime.fromisoformat("2026-11-22T14:00:04+00:00").timestamp())
    assert live.cluster.ts == ts
    assert live.cluster.indicators["connected_users"].current == 4.0
    assert live.scopes["a"].indicators["connected_users"].windows["1m"] == moments(
        60, 5.0, 4.0, 0.5
    )
    assert live.scopes["b"].error == "refused"


def test_window_statistics_grouped_by_scope() -> None:
    def item(scope: str, as_of: str, stale: bool) -> dict[str, Any]:
        return {
            "scope": scope,
            "indicator": "connected_users",
            "window": "1m",
            "as_of": as_of,
            "count": 60,
            "coverage": 1.0,
            "low_coverage": False,
            "max": 2.0,
            "avg": 1.0,
            "stddev": 0.5,
            "run_id": 1,
            "computed_at": "2026-11-22T14:00:00+00:00",
            "age_seconds": 5.0,
            "stale": stale,
        }

    data = {
        "items": [
            item("cluster", "2026-11-22T13:59:00+00:00", False),
            item("node:a", "2026-11-22T11:59:00+00:00", True),
        ],
        "stale_after_seconds": 900.0,
    }
    cluster, node = hp.window_statistics(WindowStatList.model_validate(data))
    assert (cluster.scope, cluster.stale, cluster.stale_after) == ("cluster", False, 900.0)
    assert cluster.as_of == int(datetime.fromisoformat("2026-11-22T13:59:00+00:00").timestamp())
    assert cluster.computed_at == "2026-11-22T14:00:00+00:00"
    assert [(r.indicator, r.window, r.count, r.max, r.avg, r.stddev) for r in cluster.rows] == [
        ("connected_users", "1m", 60, 2.0, 1.0, 0.5)
    ]
    assert (node.scope, node.stale) == ("node:a", True)


def test_session_search_and_pages() -> None:
    assert hp.search_params("") == {}
    assert hp.search_params("/Stocks/IBM") == {"subject": "/Stocks/IBM"}
    assert hp.search_params(" 10.0.0.7 ") == {"remote": "10.0.0.7"}
    page = SessionPage.model_validate(
        {
            "total": 1,
            "offset": 0,
            "limit": 15,
            "items": [
                {
                    "member": "a",
                    "id": "s1",
                    "remote": "127.0.0.1:5",
                    "connected_since": "1970-01-01T00:01:00Z",
                    "subjects": ["/a/b"],
                    "messages_in": 1,
                    "bytes_in": 2,
                    "bytes_out": 3,
                }
            ],
            "unreachable": [{"member": "b", "error": "refused"}],
        }
    )
    assert page.items[0].connected_since.timestamp() == 60.0
    assert page.errors == {"b": "refused"}
    run = JobRunOut.model_validate(
        {
            "id": 4,
            "status": "failed",
            "started_at": "2026-11-22T14:00:00+00:00",
            "finished_at": None,
            "duration_seconds": 8.25,
            "as_of": None,
            "master": None,
            "input_rows": None,
            "output_rows": None,
            "error": "boom",
            "stages": None,
        }
    )
    assert (run.id, run.status, run.duration_seconds, run.error) == (4, "failed", 8.25, "boom")


# --- the app --------------------------------------------------------------------------------


def test_the_app_routes_every_page_under_its_prefix() -> None:
    calls: list[str] = []

    def factory(token: str) -> ConsoleProvider:
        calls.append(token)
        raise AssertionError("no provider is needed to build the app")

    app = create_dash_app(factory, requests_pathname_prefix="/console/")
    assert [(page.group, page.path) for page in PAGES] == [
        ("Live", ""),
        ("Live", "subjects"),
        ("Live", "sessions"),
        ("Live", "trace"),
        ("Live", "delivery"),
        ("Live", "slos"),
        ("Traffic", "statistics"),
        ("Traffic", "trends"),
        ("Traffic", "hot"),
        ("Traffic", "watched"),
        ("Traffic", "browse"),
        ("Pipeline", "jobs"),
        ("Admin", "alerts"),
        ("Admin", "audit"),
    ]
    for page in PAGES:
        assert page_for(app, href(app, page.path)) is page
    assert page_for(app, "/console/nope") is None
    assert href(app, "jobs") == "/console/jobs"
    assert calls == []


def _ids(links: list[Any]) -> list[str]:
    return [link.id for link in links]


def test_the_navigation_is_grouped_and_offers_each_role_what_it_may_use() -> None:
    """Issue 34: eleven pages in one row did not fit 1440 px; a viewer was offered pages the
    admin API then refused (403)."""
    app = create_dash_app(lambda _token: cast(ConsoleProvider, None))
    trends_page = page_for(app, href(app, "trends"))
    tabs, links = nav(app, trends_page, "admin")
    assert _ids(tabs) == [f"nav-group-{g}" for g in ("live", "traffic", "pipeline", "admin")]
    assert [_prop(tab, "className") for tab in tabs].count("nav-link active") == 1
    assert _prop(tabs[1], "className") == "nav-link active"
    assert _ids(links) == [
        "nav-statistics",
        "nav-trends",
        "nav-hot",
        "nav-watched",
        "nav-browse",
    ]
    assert [page.path for page in offered("viewer")] == [
        p.path for p in PAGES if p.path not in ("trace", "audit")
    ]
    assert "audit" not in [page.path for page in offered("operator")]
    assert "trace" in [page.path for page in offered("operator")]
    assert len(offered("admin")) == len(PAGES)
    _tabs, live = nav(app, page_for(app, href(app, "")), "viewer")
    assert _ids(live) == [
        "nav-overview",
        "nav-subjects",
        "nav-sessions",
        "nav-delivery",
        "nav-slos",
    ]


def test_provider_errors_round_trip_as_json() -> None:
    error = ProviderError(409, "Conflict", "a run is going on")
    again = ProviderError.from_json(error.to_json())
    assert (again.status, again.title, again.detail) == (409, "Conflict", "a run is going on")
    with pytest.raises(ProviderError, match="409 Conflict"):
        raise again


def test_health_card_shows_the_clusters_own_view() -> None:
    from pushgrid.console.pages.overview import render_health

    members = [member(m) for m in ("m1", "m2", "m3")]
    topology = ClusterOut(
        mode="guaranteed",
        health="ok",
        quorum=False,
        stream_leader="pushgrid-m2",
        members=[
            ClusterMemberOut(name=m, state="up", seed=True, leader=m == "m2")
            for m in ("m1", "m2", "m3")
        ],
    )
    card = _props(render_health(members, topology))
    assert (card["data-mode"], card["data-quorum"], card["data-leader"]) == (
        "guaranteed",
        "false",
        "m2",
    )
    text = repr(card["children"])
    assert "Guaranteed delivery" in text
    assert "NO QUORUM" in text
    assert "stream leader: m2" in text
    alone = ClusterOut(mode="standalone", health="ok", quorum=True, members=[])
    standalone = _props(render_health(members, alone))
    assert "stream leader" not in repr(standalone["children"])
    assert ClusterOut.model_validate(topology.model_dump(mode="json")) == topology
    api = {  # what GET /api/v1/cluster answers (more than the page keeps)
        "mode": "guaranteed",
        "health": "ok",
        "quorum": True,
        "quorum_size": 2,
        "seeds": 3,
        "stream_leader": "pushgrid-m1",
        "members": [
            {"name": "m1", "index": 1, "seed": True, "state": "up", "leader": True, "quorum": True}
        ],
    }
    assert ClusterOut.model_validate(api).leader == "m1"


def test_a_member_whose_line_stopped_is_named_under_the_charts() -> None:
    """Issue 34, 4.5: a hung member's seconds are a gap, and the page says whose."""
    first = overview.plan_update(_history(100, ("a", "b")), "15m", None, True)
    assert first.problems == []
    only_a = _history(110, ("a",), since=101)
    only_a.members.append(HistorySeriesOut(scope="b", seconds=[], values={}))
    later = overview.plan_update(only_a, "15m", first.state, False)
    assert later.problems == [f"no data from b since {chart_time(100)[11:]} UTC"]


# --- clients (issue 35) ---------------------------------------------------------------------


def test_clients_state_round_trips_through_the_url() -> None:
    state = sessions.query_from_url(
        "?q=alice&transport=sse&sort=-messages_out&page=2"
        "&internal=include&client=m1%7Cabc&member=m1"
    )
    assert state == {
        "q": "alice",
        "member": "m1",
        "transport": "sse",
        "sort": "-messages_out",
        "internal": True,
        "page": 2,
        "client": "m1|abc",
    }
    assert sessions.query_from_url(sessions.url_from_query(state)) == state
    assert sessions.url_from_query(sessions.query_from_url("")) == ""
    assert sessions.api_filters(state) == {
        "sort": "-messages_out",
        "transport": "sse",
        "internal": "true",
    }
    # a shared link with bad values falls back to the defaults
    odd = sessions.query_from_url("?sort=password&transport=pigeon&page=-3")
    assert (odd["sort"], odd["transport"], odd["page"]) == ("-connected_since", "*", 0)


def test_clients_table_shows_the_api_numbers_and_no_made_up_latency() -> None:
    from pushgrid.ops.api.sessions import SessionOut, SessionPage

    info = SessionOut(
        member="m1",
        id="abc",
        remote="10.0.0.1:5000",
        connected_since=datetime.fromtimestamp(0.0, UTC),
        subjects=["/a"],
        messages_in=3,
        bytes_in=1200,
        bytes_out=4800,
        client_id="alice",
        transport="sse",
        compression=False,
        messages_out=7,
        outbound_buffer_bytes=0,
    )

    def page(*items: SessionOut) -> SessionPage:
        return SessionPage(items=list(items), total=1, offset=0, limit=15)

    rendered = str(sessions.render_sessions(page(info), 10.0))
    for shown in ("alice", "SSE", "'7'", "10.0.0.1:5000"):
        assert shown in rendered
    assert re.search(r"\d ms", rendered) is None  # no delivery report: a dash, not a number
    reported = info.model_copy(
        update={"id": "abd", "remote": "r:1", "delivery_latency_ms": 12.5, "lost_messages": 2}
    )
    rendered = str(sessions.render_sessions(page(reported), 10.0))
    assert "12.5 ms · 2 lost" in rendered
