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

from .. import format as fmt
from ..components import alert, attrs, card, page_header, pill
from ..figures import live_figure
from ..ids import Ids, indicator_id
from ..member_panel import render_panel
from ..provider import (
    CLUSTER,
    LIVE_WINDOWS,
    ClusterView,
    ConsoleProvider,
    History,
    LiveIndicator,
    LiveOverview,
    Member,
    ProviderError,
)
from . import Page, Providers

PATH = ""
TITLE = "Overview"
TICK_MS = 1000
# The charts, in page order: one per entry (a new chart is a new entry here).
CHARTS: tuple[str, ...] = INDICATOR_NAMES
TREND_REFRESH_TICKS = 300  # a statistics-store range is redrawn every five minutes

_HEALTH_KIND = {"ok": "good", "degraded": "warn", "down": "bad", "unknown": "muted"}


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Cluster health and the seven indicators, one sample a second",
                html.Span(id=Ids.OVERVIEW_UPDATED, className="updated"),
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
            html.Div(
                [
                    html.Div(id=Ids.OVERVIEW_HEALTH, className="health"),
                    html.Div(id=Ids.OVERVIEW_MEMBERS, className="members"),
                ],
                className="health-row",
            ),
            html.Div([_indicator_card(name) for name in CHARTS], className="live-grid"),
            dcc.Store(id=Ids.OVERVIEW_LAST_TS, data=None),
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


def render_health(members: Sequence[Member], topology: ClusterView | None = None) -> Component:
    health, text = fmt.cluster_health(
        members,
        None if topology is None else topology.health,
        () if topology is None else topology.reasons,
    )
    up = sum(1 for m in members if m.up)
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


def _topology_attrs(topology: ClusterView | None) -> dict[str, str]:
    if topology is None:
        return {}
    return {
        "data-mode": topology.mode or "",
        "data-quorum": "true" if topology.quorum else "false",
        "data-leader": topology.leader or "",
    }


def render_topology(topology: ClusterView | None) -> list[Component]:
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


def render_members(members: Sequence[Member]) -> list[Component]:
    cards: list[Component] = []
    for member in members:
        state = pill("UP", "good") if member.up else pill("DOWN", "bad")
        if member.up:
            facts = [
                _fact("users", fmt.count(member.connected_users)),
                _fact("subscriptions", fmt.count(member.subscriptions)),
                _fact("uptime", fmt.duration(member.uptime)),
                _fact("version", member.version or fmt.DASH),
            ]
        else:
            facts = [html.Div(member.error or "no answer", className="member-error")]
        cards.append(
            card(
                [
                    html.Div(
                        [html.Span(member.name, className="card-title"), state],
                        className="member-head",
                    ),
                    html.Div(member.url, className="muted small"),
                    html.Div(facts, className="facts"),
                    render_panel(member.panel if member.up else None),
                ],
                class_name="member-card" + ("" if member.up else " member-down"),
                **attrs({"data-member": member.name, "data-up": "true" if member.up else "false"}),
            )
        )
    return cards


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
class OverviewUpdate:
    """What one tick changes on the page (``None``: leave that element as it is)."""

    figures: dict[str, go.Figure | None]
    extensions: dict[str, Extension | None]
    values: dict[str, str]
    state: dict[str, Any]
    problems: list[str] = field(default_factory=list)


def needs_rebuild(overview: LiveOverview, range_key: str, state: Mapping[str, Any] | None) -> bool:
    """Whole figures (the whole range fetched) on the first tick, a range change, a change of
    the members charted or of a byte chart's unit; else the new seconds are appended."""
    if state is None or state.get("rebuild"):
        return True
    return state.get("range") != range_key or list(state.get("series") or []) != (
        fmt.series_names(overview)
    )


def history_since(now: int, range_key: str, state: Mapping[str, Any] | None, rebuild: bool) -> int:
    """The first second to ask the admin API for: the range's start, or just after the oldest
    second a series has charted (each series then takes only what it lacks)."""
    chosen = fmt.chart_range(range_key)
    last = dict((state or {}).get("last") or {})
    if rebuild or not last:
        return now - chosen.seconds + 1
    return int(min(last.values())) + 1


def _card_values(overview: LiveOverview) -> dict[str, str]:
    values = {}
    for indicator in CHARTS:
        live = overview.cluster.indicators.get(indicator)
        values[indicator] = fmt.compact(None if live is None else live.current, indicator)
    return values


def _problems(overview: LiveOverview) -> list[str]:
    problems = fmt.member_problems(overview.members)
    if overview.cluster.error:
        problems.append(overview.cluster.error)
    return problems


def _units(history: History) -> dict[str, tuple[float, str]]:
    """Each byte chart's (divisor, unit) for the largest value it holds."""
    return {
        indicator: fmt.byte_unit(fmt.history_peak(history, indicator))
        for indicator in CHARTS
        if fmt.is_bytes(indicator)
    }


def _time_format(seconds: int) -> str:
    return "%H:%M:%S" if seconds <= 900 else "%H:%M" if seconds <= 86400 else "%d %b %H:%M"


def plan_update(
    overview: LiveOverview,
    history: History,
    range_key: str,
    state: Mapping[str, Any] | None,
    rebuild: bool,
) -> OverviewUpdate:
    """The charts from the admin API's history: whole figures when ``rebuild``, else the
    seconds each series has not charted yet (``extendData``)."""
    series = fmt.series_names(overview)
    chosen = fmt.chart_range(range_key)
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
            figures[indicator] = live_figure(indicator, traces, unit, _time_format(chosen.seconds))
            extensions[indicator] = None
        else:
            figures[indicator] = None
            extensions[indicator] = fmt.history_extension(history, series, indicator, last, divisor)
            if fmt.is_bytes(indicator):
                grown |= fmt.byte_unit(fmt.history_peak(history, indicator))[0] > divisor
    last.update(fmt.history_newest(history, series))
    state = {"series": series, "last": last, "range": range_key, "units": units, "rebuild": grown}
    return OverviewUpdate(figures, extensions, _card_values(overview), state, _problems(overview))


def plan_trend(
    overview: LiveOverview, provider: ConsoleProvider, range_key: str, now: int
) -> OverviewUpdate:
    """A range beyond the history: the cluster's average and maximum from the statistics
    store (one point per pipeline run, over the range's ``trend_window``)."""
    chosen = fmt.chart_range(range_key)
    window = chosen.trend_window or "1h"
    figures: dict[str, go.Figure | None] = {}
    problems = _problems(overview)
    for indicator in CHARTS:
        try:
            points = provider.trend(CLUSTER, indicator, window, since=now - chosen.seconds)
        except ProviderError as exc:
            problems.append(f"statistics store: {exc}")
            points = []
        peak = max((p.max or 0.0 for p in points), default=0.0)
        divisor, unit = fmt.byte_unit(peak) if fmt.is_bytes(indicator) else (1.0, "B")
        traces = fmt.trend_traces(points, window, divisor)
        figures[indicator] = live_figure(indicator, traces, unit, _time_format(chosen.seconds))
    if not any(figures[i] is not None and figures[i].data[0].x for i in CHARTS):  # type: ignore[union-attr]
        problems.append(
            f"no statistics for the last {chosen.label} yet: the pipeline writes a point per "
            "run (Jobs page); up to 1 h comes from the admin API's history"
        )
    state = {"series": fmt.series_names(overview), "last": {}, "range": range_key, "trend": now}
    return OverviewUpdate(figures, dict.fromkeys(CHARTS), _card_values(overview), state, problems)


def charts_update(
    provider: ConsoleProvider,
    overview: LiveOverview,
    range_key: str,
    state: Mapping[str, Any] | None,
    now: int,
) -> OverviewUpdate:
    """The tick's charts: history (up to its retention) or the statistics store beyond."""
    chosen = fmt.chart_range(range_key)
    rebuild = needs_rebuild(overview, range_key, state)
    if chosen.trend_window is not None:
        drawn = None if state is None else state.get("trend")
        if rebuild or drawn is None or now - int(drawn) >= TREND_REFRESH_TICKS:
            return plan_trend(overview, provider, range_key, now)
        nothing = dict.fromkeys(CHARTS)
        return OverviewUpdate(
            dict(nothing), dict(nothing), _card_values(overview), dict(state or {}),
            _problems(overview),
        )  # fmt: skip
    history = provider.history(since=history_since(now, range_key, state, rebuild))
    return plan_update(overview, history, range_key, state, rebuild)


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    outputs = [
        Output(Ids.OVERVIEW_ALERT, "children"),
        Output(Ids.OVERVIEW_HEALTH, "children"),
        Output(Ids.OVERVIEW_MEMBERS, "children"),
        Output(Ids.OVERVIEW_LAST_TS, "data"),
        Output(Ids.OVERVIEW_UPDATED, "children"),
    ]
    for indicator in CHARTS:
        outputs += [
            Output(indicator_id(Ids.OVERVIEW_GRAPH, indicator), "figure"),
            Output(indicator_id(Ids.OVERVIEW_GRAPH, indicator), "extendData"),
            Output(indicator_id(Ids.OVERVIEW_VALUE, indicator), "children"),
            Output(indicator_id(Ids.OVERVIEW_WINDOWS, indicator), "children"),
        ]

    @app.callback(
        outputs,
        Input(Ids.OVERVIEW_INTERVAL, "n_intervals"),
        Input(Ids.OVERVIEW_RANGE, "value"),
        State(Ids.TOKEN, "data"),
        State(Ids.OVERVIEW_LAST_TS, "data"),
    )
    def tick(
        _n: int, range_key: str | None, token: str | None, state: dict[str, Any] | None
    ) -> list[Any]:
        provider = providers(token)
        key = fmt.chart_range(range_key).key
        try:
            overview = provider.live()
            update = charts_update(provider, overview, key, state, int(time.time()))
        except ProviderError as exc:
            return [alert([exc])] + [no_update] * (len(outputs) - 1)
        result: list[Any] = [
            alert(update.problems),
            render_health(overview.members, overview.topology),
            render_members(overview.members),
            update.state,
            f"updated {time.strftime('%H:%M:%S')}",
        ]
        points = fmt.chart_range(key).seconds
        for indicator in CHARTS:
            figure = update.figures[indicator]
            extension = update.extensions[indicator]
            result += [
                no_update if figure is None else figure,
                no_update if extension is None else [*extension, points],
                update.values[indicator],
                render_windows(indicator, member_indicators(overview, indicator)),
            ]
        return result


PAGE = Page(PATH, TITLE, "◉", layout)
