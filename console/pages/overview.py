"""Overview: cluster and member health at a glance, live charts of the seven indicators."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go
from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.ops.api.cluster import ClusterOut
from pushgrid.ops.api.history import HistoryOut
from pushgrid.ops.api.live import LiveIndicator
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.statistics import TrendQuery

from .. import format as fmt
from ..components import alert, attrs, card, page_header, pill
from ..figures import live_figure, time_axis
from ..ids import Ids, indicator_id
from ..liveness import not_answering_text, register_staleness
from ..member_panel import render_panel
from ..process_table import render_processes
from ..provider import CLUSTER, LIVE_WINDOWS, ConsoleProvider, LiveOverview, ProviderError
from ..url_state import UrlField, url_store
from ..url_state import register as register_url
from . import ConsolePage, Providers

PATH = ""
TITLE = "Overview"
TICK_MS = 1000
# The charts, in page order: one per entry (a new chart is a new entry here).
CHARTS: tuple[str, ...] = INDICATOR_NAMES
BACKFILL_SECONDS = 120  # how far back a tick asks for seconds a series has not drawn yet
TREND_REFRESH_SECONDS = 300  # a statistics-store range is redrawn every five minutes
NO_DATA_AFTER = 5  # seconds a member's line may lag the newest before the page says so

_HEALTH_KIND = {"ok": "good", "degraded": "warn", "down": "bad", "unknown": "muted"}


#: the chart range in the URL (``/console/?range=1h``): a view can be shared
URL_FIELDS = (
    UrlField("range", Ids.OVERVIEW_RANGE, fmt.DEFAULT_RANGE, [r.key for r in fmt.RANGES]),
)


def layout() -> Component:
    return html.Div(
        [
            url_store("overview"),
            page_header(
                TITLE,
                "Cluster health and the seven indicators, one sample a second",
                html.Span(
                    [
                        html.Span(id=Ids.OVERVIEW_UPDATED, className="updated"),
                        html.Span(id=Ids.OVERVIEW_STALE, className="stale-note"),
                    ]
                ),
            ),
            html.Div(
                [
                    html.Span("Range", className="control-label"),
                    dcc.RadioItems(
                        id=Ids.OVERVIEW_RANGE,
                        options=[{"label": r.label, "value": r.key} for r in fmt.RANGES],
                        value=fmt.DEFAULT_RANGE,
                        inline=True,
                        className="segmented",
                    ),
                    html.Span(
                        "up to 1 h: every second the admin API keeps; beyond: the statistics "
                        "store (cluster average and maximum per run)",
                        className="muted small",
                    ),
                ],
                className="controls",
            ),
            html.Div(id=Ids.OVERVIEW_ALERT, className="alerts"),
            html.Div(id=Ids.OVERVIEW_CHARTS_NOTE, className="alerts"),
            html.Div(
                [
                    html.Div(id=Ids.OVERVIEW_HEALTH, className="health"),
                    html.Div(id=Ids.OVERVIEW_MEMBERS, className="members"),
                ],
                className="health-row",
            ),
            html.Div([_indicator_card(name) for name in CHARTS], className="live-grid"),
            dcc.Store(id=Ids.OVERVIEW_LAST_TS, data=None),
            dcc.Store(id=Ids.OVERVIEW_ARRIVED, data=None),
            dcc.Store(id=Ids.OVERVIEW_CHARTS_ASK, data=None),
            dcc.Store(id=Ids.OVERVIEW_CHARTS_DONE, data=0),
            dcc.Store(id=Ids.OVERVIEW_STATUS_ASK, data=None),
            dcc.Store(id=Ids.OVERVIEW_STATUS_DONE, data=0),
            dcc.Interval(id=Ids.OVERVIEW_INTERVAL, interval=TICK_MS, n_intervals=0),
        ],
        className="page page-overview",
    )


def _indicator_card(indicator: str) -> html.Div:
    return card(
        [
            html.Div(
                [
                    html.Div(
                        [
                            html.Div(fmt.label(indicator), className="card-title"),
                            html.Div(fmt.unit(indicator), className="card-unit"),
                        ]
                    ),
                    html.Div(
                        fmt.DASH, id=indicator_id(Ids.OVERVIEW_VALUE, indicator), className="big"
                    ),
                ],
                className="card-head",
            ),
            dcc.Graph(
                id=indicator_id(Ids.OVERVIEW_GRAPH, indicator),
                figure=live_figure(indicator, []),
                config={"displayModeBar": False, "responsive": True},
                className="live-graph",
            ),
            html.Div(
                render_windows(indicator, {}), id=indicator_id(Ids.OVERVIEW_WINDOWS, indicator)
            ),
        ],
        class_name="indicator-card",
        **attrs({"data-indicator": indicator}),
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def render_health(members: Sequence[MemberOut], topology: ClusterOut | None = None) -> Component:
    health, text = fmt.cluster_health(
        members,
        None if topology is None else topology.health,
        () if topology is None else [reason.text for reason in topology.reasons],
    )
    up = sum(1 for m in members if m.reachable)
    return card(
        [
            html.Div("Cluster", className="card-title"),
            html.Div(pill(health.upper(), _HEALTH_KIND[health]), className="health-pill"),
            html.Div(text, className="muted"),
            html.Div(f"{up}/{len(members)} up", className="big"),
            *render_topology(topology),
        ],
        class_name=f"health-card health-{health}",
        **attrs({"data-health": health, **_topology_attrs(topology)}),
    )


def _topology_attrs(topology: ClusterOut | None) -> dict[str, str]:
    if topology is None:
        return {}
    return {
        "data-mode": topology.mode or "",
        "data-quorum": "true" if topology.quorum else "false",
        "data-leader": topology.leader or "",
    }


def render_topology(topology: ClusterOut | None) -> list[Component]:
    """Delivery mode, quorum and the stream leader, as the members themselves report them."""
    if topology is None or topology.mode in (None, "standalone"):
        return []
    quorum = pill("QUORUM", "good") if topology.quorum else pill("NO QUORUM", "bad")
    leader = topology.leader or fmt.DASH
    seeds = sum(1 for m in topology.members if m.seed)
    return [
        html.Div([html.Span(f"{topology.mode.capitalize()} delivery "), quorum], className="small"),
        html.Div(f"stream leader: {leader} · seeds: {seeds}", className="muted small"),
    ]


def render_members(members: Sequence[MemberOut]) -> list[Component]:
    cards: list[Component] = []
    for member in members:
        state = _state_pill(member)
        if member.reachable:
            facts = [
                _fact("users", fmt.count(member.connected_users)),
                _fact("subscriptions", fmt.count(member.subscriptions)),
                _fact("uptime", fmt.duration(member.uptime_seconds)),
                _fact("version", member.version or fmt.DASH),
            ]
        elif (silent := member.not_answering_seconds) is not None:  # hung: there, not answering
            facts = [html.Div(not_answering_text(silent), className="member-error")]
        else:
            facts = [html.Div(member.error or "no answer", className="member-error")]
        cards.append(
            card(
                [
                    html.Div(
                        [html.Span(member.name, className="card-title"), state],
                        className="member-head",
                    ),
                    html.Div(member.monitor_url, className="muted small"),
                    html.Div(facts, className="facts"),
                    render_panel(member.panel if member.reachable else None),
                    render_processes(member.processes if member.reachable else None),
                ],
                class_name="member-card" + ("" if member.reachable else " member-down"),
                **attrs(
                    {
                        "data-member": member.name,
                        "data-up": "true" if member.reachable else "false",
                        "data-answering": (
                            "false" if member.not_answering_seconds is not None else "true"
                        ),
                    }
                ),
            )
        )
    return cards


def _state_pill(member: MemberOut) -> html.Span:
    if member.reachable:
        return pill("UP", "good")
    if member.not_answering_seconds is not None:
        return pill("NOT ANSWERING", "warn")
    return pill("DOWN", "bad")


def _fact(name: str, value: str) -> html.Div:
    return html.Div([html.Span(name, className="fact-name"), html.Span(value)], className="fact")


def render_windows(indicator: str, scopes: Mapping[str, LiveIndicator | None]) -> html.Table:
    """The 1m / 5m / 15m max, average and standard deviation under an indicator's chart.

    One block of rows per member (live windows are per member: the cluster's come from the
    pipeline); the member's name heads its block when there are several.
    """
    rows: list[Component] = []
    named = len(scopes) > 1
    for member, live in scopes.items():
        for window in LIVE_WINDOWS:
            moments = None if live is None else live.windows.get(window)
            head = f"{member} · {window}" if named else window
            cells = [html.Td(head, className="window")]
            for stat, _ in fmt.STATS:
                value = None if moments is None else getattr(moments, stat)
                cells.append(
                    html.Td(
                        fmt.compact(value, indicator),
                        **attrs({"data-stat": stat, "data-window": window, "data-member": member}),
                    )
                )
            rows.append(html.Tr(cells))
    if not rows:
        rows.append(html.Tr(html.Td("no live windows", colSpan=4, className="empty")))
    return html.Table(
        [
            html.Thead(html.Tr([html.Th(""), *(html.Th(label) for _, label in fmt.STATS)])),
            html.Tbody(rows),
        ],
        className="window-table",
    )


def member_indicators(overview: LiveOverview, indicator: str) -> dict[str, LiveIndicator | None]:
    """Each member's live ``indicator`` (None for a member that could not be read)."""
    out: dict[str, LiveIndicator | None] = {}
    for member in overview.members:
        scope = overview.scopes.get(member.name)
        out[member.name] = None if scope is None else scope.indicators.get(indicator)
    return out


Extension = tuple[dict[str, list[list[object]]], list[int]]


@dataclass(frozen=True)
class ChartsUpdate:
    """What one charts round changes (``None``: leave that chart as it is)."""

    figures: dict[str, go.Figure | None]
    extensions: dict[str, Extension | None]
    state: dict[str, Any]
    problems: list[str] = field(default_factory=list)


def chart_series(history: HistoryOut) -> list[str]:
    """The lines of every chart: the cluster, then each member when there are several."""
    members = [series.scope for series in history.members]
    return [CLUSTER] if len(members) <= 1 else [CLUSTER, *members]


def needs_rebuild(range_key: str, state: Mapping[str, Any] | None) -> bool:
    """Whole figures (the whole range fetched) on the first round, a range change, or when a
    byte chart outgrew its unit; else the new seconds are appended."""
    if state is None or state.get("rebuild") or state.get("trend") is not None:
        return True
    return state.get("range") != range_key


def history_since(now: int, range_key: str, state: Mapping[str, Any] | None, rebuild: bool) -> int:
    """The first second to ask the admin API for: the range's start, or just after the oldest
    second a series has charted (each series then takes only what it lacks)."""
    chosen = fmt.chart_range(range_key)
    last = dict((state or {}).get("last") or {})
    if rebuild or not last:
        return now - chosen.seconds + 1
    # a series that stopped (a member down) must not drag every later round back to its end:
    # the admin API back-fills at most a minute late (the members' Recent), so two suffice
    return max(int(min(last.values())), now - BACKFILL_SECONDS) + 1


def _units(history: HistoryOut) -> dict[str, tuple[float, str]]:
    """Each byte chart's (divisor, unit) for the largest value it holds."""
    return {
        indicator: fmt.byte_unit(fmt.history_peak(history, indicator))
        for indicator in CHARTS
        if fmt.is_bytes(indicator)
    }


def plan_update(
    history: HistoryOut, range_key: str, state: Mapping[str, Any] | None, rebuild: bool
) -> ChartsUpdate:
    """The charts from the admin API's history: whole figures when ``rebuild``, else the
    seconds each series has not charted yet (``extendData``)."""
    series = chart_series(history)
    old = dict((state or {}).get("units") or {})
    units = _units(history) if rebuild else {k: tuple(v) for k, v in old.items()}
    last: dict[str, int] = {} if rebuild else dict((state or {}).get("last") or {})
    figures: dict[str, go.Figure | None] = {}
    extensions: dict[str, Extension | None] = {}
    grown = False
    for indicator in CHARTS:
        divisor, unit = units.get(indicator, (1.0, "B"))
        if rebuild:
            traces = fmt.history_traces(history, series, indicator, divisor)
            figures[indicator] = live_figure(indicator, traces, unit, empty=NO_SAMPLES)
            extensions[indicator] = None
        else:
            figures[indicator] = None
            extensions[indicator] = fmt.history_extension(history, series, indicator, last, divisor)
            if fmt.is_bytes(indicator):
                grown |= fmt.byte_unit(fmt.history_peak(history, indicator))[0] > divisor
    last.update(fmt.history_newest(history, series))
    state = {"series": series, "last": last, "range": range_key, "units": units, "rebuild": grown}
    return ChartsUpdate(figures, extensions, state, no_data_from(last))


def no_data_from(last: Mapping[str, int]) -> list[str]:
    """A note per member whose line stopped while the others go on (a member that hangs or is
    down: its line and the cluster's show a gap, issue 34, 4.5), naming when it stopped."""
    members = {name: ts for name, ts in last.items() if name != CLUSTER}
    newest = max(members.values(), default=None)
    return [
        f"no data from {name} since {fmt.chart_time(int(ts))[11:]} UTC"
        for name, ts in members.items()
        if newest is not None and newest - int(ts) > NO_DATA_AFTER
    ]


NO_SAMPLES = "waiting for the first samples from the admin API"


def no_trend_text(label: str) -> str:
    """Why a long range's chart is empty (issue 34: seven empty charts, meaningless axes)."""
    return (
        f"no data for the last {label} yet: the admin API holds the last hour; beyond it the "
        "statistics pipeline writes one point per run (Jobs page)"
    )


def plan_trend(provider: ConsoleProvider, range_key: str, now: int) -> ChartsUpdate:
    """A range beyond the history: the cluster's average and maximum from the statistics
    store (one point per pipeline run, over the range's ``trend_window``); a chart the store
    has nothing for yet is filled from the admin API's history (the cluster's last hour), and
    one with neither says why. The axis spans the selected range."""
    chosen = fmt.chart_range(range_key)
    window = chosen.trend_window or "1h"
    figures: dict[str, go.Figure | None] = {}
    problems: list[str] = []
    history: HistoryOut | None = None
    drawn = 0
    for indicator in CHARTS:
        try:
            since = now - chosen.seconds
            points = provider.trend(
                TrendQuery(scope=CLUSTER, indicator=indicator, window=window, since=since)
            )
        except ProviderError as exc:
            problems.append(f"statistics store: {exc}")
            points = []
        drawn += len(points)
        if points:
            peak = max((p.max or 0.0 for p in points), default=0.0)
            divisor, unit = fmt.byte_unit(peak) if fmt.is_bytes(indicator) else (1.0, "B")
            traces = fmt.trend_traces(points, window, divisor)
        else:  # the history the admin API holds, rather than nothing
            if history is None:
                history = provider.history(since=now - chosen.seconds)
            peak = fmt.history_peak(history, indicator)
            divisor, unit = fmt.byte_unit(peak) if fmt.is_bytes(indicator) else (1.0, "B")
            traces = fmt.history_traces(history, [CLUSTER], indicator, divisor)
        figure = live_figure(indicator, traces, unit, empty=no_trend_text(chosen.label))
        figures[indicator] = time_axis(figure, now - chosen.seconds, now)
    if not drawn and not problems:
        problems.append(
            f"no statistics for the last {chosen.label} yet: the pipeline writes a point per "
            "run (Jobs page); the charts show the admin API's history (its last hour) until then"
        )
    state = {"series": [], "last": {}, "range": range_key, "trend": now}
    return ChartsUpdate(figures, dict.fromkeys(CHARTS), state, problems)


def charts_update(
    provider: ConsoleProvider, range_key: str, state: Mapping[str, Any] | None, now: int
) -> ChartsUpdate:
    """One round of the charts: the history (up to its retention) or the statistics store."""
    chosen = fmt.chart_range(range_key)
    if chosen.trend_window is not None:
        drawn = None if state is None else state.get("trend")
        if (
            state is None
            or state.get("range") != range_key
            or drawn is None
            or (now - int(drawn) >= TREND_REFRESH_SECONDS)
        ):
            return plan_trend(provider, range_key, now)
        nothing = dict.fromkeys(CHARTS)
        return ChartsUpdate(dict(nothing), dict(nothing), dict(state))
    rebuild = needs_rebuild(range_key, state)
    history = provider.history(since=history_since(now, range_key, state, rebuild))
    if not rebuild and chart_series(history) != list((state or {}).get("series") or []):
        rebuild = True  # a member came or went: redraw the whole range
        history = provider.history(since=history_since(now, range_key, state, rebuild))
    return plan_update(history, range_key, state, rebuild)


def card_values(overview: LiveOverview) -> dict[str, str]:
    values = {}
    for indicator in CHARTS:
        live = overview.cluster.indicators.get(indicator)
        values[indicator] = fmt.compact(None if live is None else live.current, indicator)
    return values


def problems_of(overview: LiveOverview) -> list[str]:
    hung = [m for m in overview.members if m.not_answering_seconds is not None]
    problems = [
        f"member {m.name} is {not_answering_text(m.not_answering_seconds or 0)}" for m in hung
    ]
    problems += fmt.member_problems(m for m in overview.members if m.not_answering_seconds is None)
    if overview.cluster.error:
        problems.append(overview.cluster.error)
    return problems


# --- callbacks ------------------------------------------------------------------------------

# Asks the server for a round (status, charts) only when the last one has answered (or 10 ticks
# went by): Dash drops the answer of a callback triggered again before it answered, so a round
# slower than the tick (a whole range drawn, or a slow member, on a loaded machine) would never
# land, and the page stayed empty (plotly/dash issue 1613).
PACE = """
function(n, done, asked) {
    const last = asked || {id: 0, tick: 0};
    if (last.id > (done || 0) && n - last.tick < 10) {
        return window.dash_clientside.no_update;
    }
    return {id: last.id + 1, tick: n};
}
"""


def register(app: Dash, providers: Providers) -> None:
    register_staleness(
        app, Ids.OVERVIEW_UPDATED, Ids.OVERVIEW_ARRIVED, Ids.OVERVIEW_STALE, Ids.OVERVIEW_INTERVAL
    )
    _register_status(app, providers)
    _register_charts(app, providers)
    register_url(app, "overview", URL_FIELDS)


def _register_status(app: Dash, providers: Providers) -> None:
    outputs = [
        Output(Ids.OVERVIEW_ALERT, "children"),
        Output(Ids.OVERVIEW_HEALTH, "children"),
        Output(Ids.OVERVIEW_MEMBERS, "children"),
        Output(Ids.OVERVIEW_UPDATED, "children"),
    ]
    for indicator in CHARTS:
        outputs += [
            Output(indicator_id(Ids.OVERVIEW_VALUE, indicator), "children"),
            Output(indicator_id(Ids.OVERVIEW_WINDOWS, indicator), "children"),
        ]

    _pace(app, Ids.OVERVIEW_STATUS_ASK, Ids.OVERVIEW_STATUS_DONE)
    outputs.append(Output(Ids.OVERVIEW_STATUS_DONE, "data"))

    @app.callback(outputs, Input(Ids.OVERVIEW_STATUS_ASK, "data"), State(Ids.TOKEN, "data"))
    def tick(asked: dict[str, int] | None, token: str | None) -> list[Any]:
        done = (asked or {}).get("id", 0)
        try:
            overview = providers(token).live()
        except ProviderError as exc:
            return [alert([exc])] + [no_update] * (len(outputs) - 2) + [done]
        values = card_values(overview)
        result: list[Any] = [
            alert(problems_of(overview)),
            render_health(overview.members, overview.topology),
            render_members(overview.members),
            f"updated {time.strftime('%H:%M:%S')}",
        ]
        for indicator in CHARTS:
            result += [
                values[indicator],
                render_windows(indicator, member_indicators(overview, indicator)),
            ]
        return [*result, done]


def _pace(app: Dash, ask: str, done: str) -> None:
    """Ask for a round on each tick when the previous one has answered (:data:`PACE`)."""
    app.clientside_callback(  # type: ignore[no-untyped-call]
        PACE,
        Output(ask, "data"),
        Input(Ids.OVERVIEW_INTERVAL, "n_intervals"),
        State(done, "data"),
        State(ask, "data"),
    )


def _register_charts(app: Dash, providers: Providers) -> None:
    _pace(app, Ids.OVERVIEW_CHARTS_ASK, Ids.OVERVIEW_CHARTS_DONE)
    outputs = [
        Output(Ids.OVERVIEW_CHARTS_NOTE, "children"),
        Output(Ids.OVERVIEW_LAST_TS, "data"),
        Output(Ids.OVERVIEW_CHARTS_DONE, "data"),
    ]
    for indicator in CHARTS:
        outputs += [
            Output(indicator_id(Ids.OVERVIEW_GRAPH, indicator), "figure"),
            Output(indicator_id(Ids.OVERVIEW_GRAPH, indicator), "extendData"),
        ]

    @app.callback(
        outputs,
        Input(Ids.OVERVIEW_CHARTS_ASK, "data"),
        Input(Ids.OVERVIEW_RANGE, "value"),
        State(Ids.TOKEN, "data"),
        State(Ids.OVERVIEW_LAST_TS, "data"),
    )
    def charts(
        asked: dict[str, int] | None,
        range_key: str | None,
        token: str | None,
        state: dict[str, Any] | None,
    ) -> list[Any]:
        done = (asked or {}).get("id", 0)
        key = fmt.chart_range(range_key).key
        try:
            update = charts_update(providers(token), key, state, int(time.time()))
        except ProviderError as exc:
            return [alert([exc], "warn"), no_update, done] + [no_update] * (len(outputs) - 3)
        result: list[Any] = [alert(update.problems, "warn"), update.state, done]
        points = fmt.chart_range(key).seconds
        for indicator in CHARTS:
            figure = update.figures[indicator]
            extension = update.extensions[indicator]
            result += [
                no_update if figure is None else figure,
                no_update if extension is None else [*extension, points],
            ]
        return result


PAGE = ConsolePage(PATH, TITLE, "◉", layout, group="Live")
