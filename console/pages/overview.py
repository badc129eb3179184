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
from ..figures import LIVE_POINTS, live_figure
from ..ids import Ids, indicator_id
from ..member_panel import render_panel
from ..provider import (
    LIVE_WINDOWS,
    ClusterView,
    LiveIndicator,
    LiveOverview,
    Member,
    ProviderError,
)
from . import Page, Providers

PATH = ""
TITLE = "Overview"
TICK_MS = 1000

_HEALTH_KIND = {"ok": "good", "degraded": "warn", "down": "bad", "unknown": "muted"}


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Cluster health and the seven indicators, live (one sample a second)",
                html.Span(id=Ids.OVERVIEW_UPDATED, className="updated"),
            ),
            html.Div(id=Ids.OVERVIEW_ALERT, className="alerts"),
            html.Div(
                [
                    html.Div(id=Ids.OVERVIEW_HEALTH, className="health"),
                    html.Div(id=Ids.OVERVIEW_MEMBERS, className="members"),
                ],
                className="health-row",
            ),
            html.Div([_indicator_card(name) for name in INDICATOR_NAMES], className="live-grid"),
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


@dataclass(frozen=True)
class OverviewUpdate:
    """What one tick changes on the page (``None``: leave that element as it is)."""

    figures: dict[str, go.Figure | None]
    extensions: dict[str, tuple[dict[str, list[list[object]]], list[int]] | None]
    values: dict[str, str]
    state: dict[str, Any]
    problems: list[str] = field(default_factory=list)


def plan_update(overview: LiveOverview, state: Mapping[str, Any] | None) -> OverviewUpdate:
    """New figures when the set of series changed (or on the first tick), else new points."""
    series = fmt.series_names(overview)
    newest = fmt.newest_seconds(overview, series)
    figures: dict[str, go.Figure | None] = {}
    extensions: dict[str, tuple[dict[str, list[list[object]]], list[int]] | None] = {}
    fresh = state is None or list(state.get("series") or []) != series
    last: dict[str, int] = {} if fresh or state is None else dict(state.get("last") or {})
    for indicator in INDICATOR_NAMES:
        if fresh:
            figures[indicator] = live_figure(
                indicator, series, fmt.live_points(overview, series, indicator)
            )
            extensions[indicator] = None
        else:
            figures[indicator] = None
            extensions[indicator] = fmt.live_extension(overview, series, indicator, last)
    values = {}
    for indicator in INDICATOR_NAMES:
        live = overview.cluster.indicators.get(indicator)
        values[indicator] = fmt.compact(None if live is None else live.current, indicator)
    last.update(newest)
    problems = fmt.member_problems(overview.members)
    if overview.cluster.error:
        problems.append(overview.cluster.error)
    return OverviewUpdate(figures, extensions, values, {"series": series, "last": last}, problems)


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    outputs = [
        Output(Ids.OVERVIEW_ALERT, "children"),
        Output(Ids.OVERVIEW_HEALTH, "children"),
        Output(Ids.OVERVIEW_MEMBERS, "children"),
        Output(Ids.OVERVIEW_LAST_TS, "data"),
        Output(Ids.OVERVIEW_UPDATED, "children"),
    ]
    for indicator in INDICATOR_NAMES:
        outputs += [
            Output(indicator_id(Ids.OVERVIEW_GRAPH, indicator), "figure"),
            Output(indicator_id(Ids.OVERVIEW_GRAPH, indicator), "extendData"),
            Output(indicator_id(Ids.OVERVIEW_VALUE, indicator), "children"),
            Output(indicator_id(Ids.OVERVIEW_WINDOWS, indicator), "children"),
        ]

    @app.callback(
        outputs,
        Input(Ids.OVERVIEW_INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        State(Ids.OVERVIEW_LAST_TS, "data"),
    )
    def tick(_n: int, token: str | None, state: dict[str, Any] | None) -> list[Any]:
        provider = providers(token)
        try:
            overview = provider.live()
        except ProviderError as exc:
            return [alert([exc])] + [no_update] * (len(outputs) - 1)
        update = plan_update(overview, state)
        result: list[Any] = [
            alert(update.problems),
            render_health(overview.members, overview.topology),
            render_members(overview.members),
            update.state,
            f"updated {time.strftime('%H:%M:%S')}",
        ]
        for indicator in INDICATOR_NAMES:
            figure = update.figures[indicator]
            extension = update.extensions[indicator]
            result += [
                no_update if figure is None else figure,
                no_update if extension is None else [*extension, LIVE_POINTS],
                update.values[indicator],
                render_windows(indicator, member_indicators(overview, indicator)),
            ]
        return result


PAGE = Page(PATH, TITLE, "◉", layout)
