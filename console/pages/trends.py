"""Trends: the pipeline's trend series of one indicator, window and scope over a time range."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops.api.trends import TrendPointOut
from pushgrid.ops.statistics import TrendQuery

from .. import format as fmt
from ..components import alert, attrs, card, page_header
from ..figures import trend_figure
from ..ids import Ids
from ..provider import CLUSTER, ProviderError
from ..url_state import UrlField, url_store
from ..url_state import register as register_url
from . import ConsolePage, Providers

PATH = "trends"
TITLE = "Trends"

RANGES: tuple[tuple[str, int | None], ...] = (
    ("6 h", 6 * 3600),
    ("24 h", 86400),
    ("7 d", 7 * 86400),
    ("30 d", 30 * 86400),
    ("1 y", 365 * 86400),
    ("all", None),
)
_RANGE_SECONDS = dict(RANGES)
#: the controls in the URL (``/console/trends?indicator=connected_users&range=30+d``)
URL_FIELDS = (
    UrlField("indicator", Ids.TRENDS_INDICATOR, "outgoing_messages_per_second", INDICATOR_NAMES),
    UrlField("window", Ids.TRENDS_WINDOW, "1h", WINDOW_NAMES),
    UrlField("scope", Ids.TRENDS_SCOPE, CLUSTER),
    UrlField("range", Ids.TRENDS_RANGE, "7 d", list(_RANGE_SECONDS)),
)


def layout() -> Component:
    return html.Div(
        [
            url_store(PATH),
            page_header(TITLE, "The pipeline's window statistics over time"),
            html.Div(id=Ids.TRENDS_ALERT, className="alerts"),
            html.Div(
                [
                    _control(
                        "Indicator",
                        dcc.Dropdown(
                            id=Ids.TRENDS_INDICATOR,
                            options=[{"label": fmt.label(n), "value": n} for n in INDICATOR_NAMES],
                            value="outgoing_messages_per_second",
                            clearable=False,
                        ),
                        "wide",
                    ),
                    _control(
                        "Window",
                        dcc.Dropdown(
                            id=Ids.TRENDS_WINDOW,
                            options=[{"label": w, "value": w} for w in WINDOW_NAMES],
                            value="1h",
                            clearable=False,
                        ),
                    ),
                    _control(
                        "Scope",
                        dcc.Dropdown(
                            id=Ids.TRENDS_SCOPE,
                            options=[{"label": "Cluster", "value": CLUSTER}],
                            value=CLUSTER,
                            clearable=False,
                        ),
                    ),
                    _control(
                        "Range",
                        dcc.RadioItems(
                            id=Ids.TRENDS_RANGE,
                            options=[{"label": name, "value": name} for name, _ in RANGES],
                            value="7 d",
                            inline=True,
                            className="segmented",
                        ),
                    ),
                ],
                className="controls",
            ),
            card(
                [
                    dcc.Graph(
                        id=Ids.TRENDS_GRAPH,
                        figure=trend_figure([], "outgoing_messages_per_second", "1h", CLUSTER),
                        config={"displaylogo": False, "responsive": True},
                    ),
                    html.Div(id=Ids.TRENDS_SUMMARY, className="summary"),
                ]
            ),
        ],
        className="page page-trends",
    )


def _control(name: str, control: Component, size: str = "") -> html.Div:
    return html.Div(
        [html.Div(name, className="control-label"), control], className=f"control {size}"
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def time_range(name: str | None, now: float) -> tuple[int | None, int | None]:
    """(since, until) Unix seconds of a range preset (``None``: unbounded)."""
    seconds = _RANGE_SECONDS.get(name or "")
    return (None if seconds is None else int(now) - seconds), None


def trend_span(since: int | None, points: Sequence[TrendPointOut], now: float) -> tuple[int, int]:
    """The time axis of a trend: the selected range up to now; for "all", from an hour before
    the first point (one point drew on an axis a millisecond wide: issue 34)."""
    end = int(now)
    if since is not None:
        return since, end
    first = min((fmt.second(p.as_of) for p in points), default=end - 86_400)
    return min(first - 3600, end - 3600), end


def first_points_text(now: float) -> str:
    """When an empty series will get its first point: the pipeline writes one per closed UTC
    hour of the archive (docs/pipeline.md), on its next run after that hour ends."""
    next_hour = (int(now) // 3600 + 1) * 3600
    return (
        "No trend points yet for this range. The statistics pipeline writes one point per "
        "closed UTC hour of archive data: the next hour closes at "
        f"{fmt.timestamp(next_hour)}, and its point appears after the next statistics run "
        "(Jobs page) following that time."
    )


def render_summary(points: Sequence[TrendPointOut], indicator: str, now: float) -> Component:
    if not points:
        return html.Span(first_points_text(now), className="muted", **attrs({"data-points": "0"}))
    averages = [p.avg for p in points if p.avg is not None]
    maxima = [p.max for p in points if p.max is not None]
    facts = [
        ("points", str(len(points))),
        ("from", fmt.moment(points[0].as_of)),
        ("to", fmt.moment(points[-1].as_of)),
        ("latest avg", fmt.compact(points[-1].avg, indicator)),
        ("highest max", fmt.compact(max(maxima) if maxima else None, indicator)),
        (
            "mean of avg",
            fmt.compact(sum(averages) / len(averages) if averages else None, indicator),
        ),
    ]
    return html.Div(
        [
            html.Div([html.Span(k, className="fact-name"), html.Span(v)], className="fact")
            for k, v in facts
        ],
        className="facts",
        **attrs({"data-points": str(len(points))}),
    )


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    register_url(app, PATH, URL_FIELDS)

    @app.callback(
        Output(Ids.TRENDS_SCOPE, "options"),
        Input(Ids.TRENDS_INDICATOR, "id"),  # once, when the page is shown
        State(Ids.TOKEN, "data"),
    )
    def scopes(_id: str, token: str | None) -> Any:
        provider = providers(token)
        try:
            names = provider.scopes()
            members = provider.member_names()
        except ProviderError:
            return no_update  # the graph callback shows the error
        return fmt.scope_options(names or [CLUSTER], members)

    @app.callback(
        Output(Ids.TRENDS_GRAPH, "figure"),
        Output(Ids.TRENDS_SUMMARY, "children"),
        Output(Ids.TRENDS_ALERT, "children"),
        Input(Ids.TRENDS_INDICATOR, "value"),
        Input(Ids.TRENDS_WINDOW, "value"),
        Input(Ids.TRENDS_SCOPE, "value"),
        Input(Ids.TRENDS_RANGE, "value"),
        State(Ids.TOKEN, "data"),
    )
    def show(
        indicator: str, window: str, scope: str, range_name: str, token: str | None
    ) -> tuple[Any, Any, Any]:
        provider = providers(token)
        now = time.time()
        since, until = time_range(range_name, now)
        try:
            query = TrendQuery(
                scope=scope, indicator=indicator, window=window, since=since, until=until
            )
            points = provider.trend(query)
        except ProviderError as exc:
            return trend_figure([], indicator, window, scope), no_update, alert([exc])
        return (
            trend_figure(points, indicator, window, scope, trend_span(since, points, now)),
            render_summary(points, indicator, time.time()),
            [],
        )


PAGE = ConsolePage(PATH, TITLE, "↗", layout, group="Traffic")
