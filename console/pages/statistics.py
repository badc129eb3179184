"""Statistics: the pipeline's seven indicators x twelve windows for one scope, with freshness.

Every scope is fetched at once and kept in the browser, so switching scope needs no request.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.metrics.window_spec import LOW_COVERAGE, WINDOW_NAMES
from pushgrid.ops.api.delivery_windows import DeliveryWindowList

from .. import format as fmt
from ..components import alert, attrs, card, page_header
from ..ids import Ids
from ..provider import CLUSTER, ProviderError, WindowStatistics
from ..url_state import UrlField, url_store
from ..url_state import register as register_url
from . import ConsolePage, Providers
from .statistics_delivery import (
    DeliveryStatsIds,
    DeliveryWindowsProvider,
    render_delivery_windows,
)

PATH = "statistics"
TITLE = "Statistics"


#: the scope in the URL (``/console/statistics?scope=m1``)
URL_FIELDS = (UrlField("scope", Ids.STATS_SCOPE, CLUSTER),)


def layout() -> Component:
    return html.Div(
        [
            url_store(PATH),
            page_header(
                TITLE,
                "Max, average and standard deviation over 1 minute to 15 months, "
                "from the statistics pipeline",
                html.Button("Refresh", id=Ids.STATS_REFRESH, className="button", n_clicks=0),
            ),
            html.Div(id=Ids.STATS_ALERT, className="alerts"),
            html.Div(
                [
                    html.Span("Scope", className="control-label"),
                    dcc.RadioItems(
                        id=Ids.STATS_SCOPE,
                        options=[{"label": "Cluster", "value": CLUSTER}],
                        value=CLUSTER,
                        inline=True,
                        className="segmented",
                    ),
                ],
                className="controls",
            ),
            html.Div(id=Ids.STATS_ASOF),
            card(html.Div(id=Ids.STATS_TABLE, className="table-scroll"), class_name="flush"),
            card(html.Div(id=DeliveryStatsIds.TABLE, className="table-scroll"), class_name="flush"),
            dcc.Store(id=Ids.STATS_DATA, data=None),
            dcc.Store(id=DeliveryStatsIds.DATA, data=None),
        ],
        className="page page-statistics",
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def render_asof(stats: WindowStatistics | None, now: float) -> Component:
    if stats is None:
        return html.Div(
            "no statistics for this scope",
            className="asof asof-stale",
            **attrs({"data-stale": "true"}),
        )
    stale, text = fmt.freshness(stats, now)
    parts: list[Component | str] = [html.Span("● " if not stale else "▲ "), html.Span(text)]
    if stats.computed_at:
        parts.append(html.Span(f" · written {fmt.iso_time(stats.computed_at)}", className="muted"))
    return html.Div(
        parts,
        className="asof asof-stale" if stale else "asof asof-fresh",
        **attrs({"data-stale": "true" if stale else "false", "data-as-of": str(stats.as_of or "")}),
    )


def render_table(
    stats: WindowStatistics | None, indicators: Sequence[str] | None = None
) -> Component:
    """Indicators down the side (three lines each: max, avg, σ), windows across; the seven
    indicators unless ``indicators`` (a watched pattern's six) says else."""
    if stats is None:
        return html.Div("nothing to show", className="empty")
    lines = fmt.stats_matrix(stats, indicators)
    windows = [cell.window for cell in lines[0].cells] if lines else []
    head = html.Thead(
        html.Tr(
            [html.Th("indicator"), html.Th("")]
            + [html.Th(w, className="num", **attrs({"data-window": w})) for w in windows]
        )
    )
    body: list[Component] = []
    labels = dict(fmt.STATS)
    for position, line in enumerate(lines):
        first = line.stat == fmt.STATS[0][0]
        cells: list[Component] = []
        if first:
            cells.append(
                html.Td(
                    [
                        html.Div(fmt.label(line.indicator)),
                        html.Div(fmt.unit(line.indicator), className="muted small"),
                    ],
                    rowSpan=len(fmt.STATS),
                    className="indicator-name",
                )
            )
        cells.append(html.Td(labels[line.stat], className="stat-name"))
        values = [c.value for c in line.cells if c.value is not None]
        low, top = (min(values), max(values)) if values else (0.0, 0.0)
        cells.extend(stat_cell(line, cell, low, top) for cell in line.cells)
        band = (position // len(fmt.STATS)) % 2
        body.append(html.Tr(cells, className=f"band-{band}" + (" band-start" if first else "")))
    return html.Table(
        [head, html.Tbody(body)], className="stats-table", **attrs({"data-scope": stats.scope})
    )


#: The mark of a window whose statistics describe under 90% of its seconds (fmt.LOW_COVERAGE)
PARTIAL_MARK = "◔"


def stat_cell(line: fmt.StatLine, cell: fmt.StatCell, low: float, top: float) -> Component:
    """One value; a window mostly without samples is marked, its tooltip says how much it
    covers (its value describes those seconds only, never the whole window)."""
    classes = "num" + (" empty-cell" if cell.value is None else "")
    title = f"{line.indicator} {line.stat} {cell.window}: {cell.value!r} (n={cell.count})"
    children: str | list[Component | str] = cell.text
    if cell.partial:
        classes += " partial"
        title += f", {fmt.coverage_text(cell)}"
        children = [cell.text, html.Sup(PARTIAL_MARK, className="partial-mark")]
    return html.Td(
        children,
        className=classes,
        style=heat(cell.value, low, top),
        title=title,
        **attrs(
            {
                "data-indicator": line.indicator,
                "data-window": cell.window,
                "data-stat": line.stat,
                "data-value": "" if cell.value is None else repr(cell.value),
                "data-coverage": f"{cell.coverage:.6f}",
            }
        ),
    )


def coverage_note(stats: WindowStatistics | None) -> Component | None:
    """Under the as-of line: which windows are partial, and what that means."""
    if stats is None:
        return None
    partial = sorted(
        {r.window for r in stats.rows if r.coverage < LOW_COVERAGE and r.count > 0},
        key=WINDOW_NAMES.index,
    )
    if not partial:
        return None
    return html.Div(
        f"{PARTIAL_MARK} {', '.join(partial)}: less than {LOW_COVERAGE:.0%} of the window has "
        "samples yet; max, avg and σ describe only the seconds with data (hover a value for "
        "its coverage)",
        className="coverage-note muted",
        **attrs({"data-partial-windows": " ".join(partial)}),
    )


def heat(value: float | None, low: float, top: float) -> dict[str, str]:
    """A tint from the smallest to the largest value of a line (a heat strip across windows)."""
    if value is None or top <= low:
        return {}
    share = (value - low) / (top - low)
    return {"backgroundColor": f"rgba(56, 189, 248, {0.02 + 0.2 * share:.3f})"}


def pick(data: Sequence[WindowStatistics], scope: str | None) -> WindowStatistics | None:
    for stats in data:
        if stats.scope == scope:
            return stats
    return None


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    register_url(app, PATH, URL_FIELDS)

    @app.callback(
        Output(Ids.STATS_DATA, "data"),
        Output(Ids.STATS_SCOPE, "options"),
        Output(Ids.STATS_SCOPE, "value"),
        Output(Ids.STATS_ALERT, "children"),
        Output(DeliveryStatsIds.DATA, "data"),
        Input(Ids.STATS_REFRESH, "n_clicks"),
        State(Ids.TOKEN, "data"),
        State(Ids.STATS_SCOPE, "value"),
    )
    def load(_clicks: int, token: str | None, scope: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        try:
            every = provider.all_window_stats()
            members = provider.member_names()
            delivery = _delivery(provider)
        except ProviderError as exc:
            return no_update, no_update, no_update, alert([exc]), no_update
        scopes = [s.scope for s in every] or [CLUSTER]
        chosen = scope if scope in scopes else scopes[0]
        problems: list[ProviderError | str] = []
        stale = [fmt.scope_label(s.scope) for s in every if s.stale]
        if stale:
            problems.append(
                f"stale pipeline results for {', '.join(stale)}: older than "
                f"{fmt.duration(every[0].stale_after)} (is the statistics job running?)"
            )
        return (
            [s.to_json() for s in every],
            fmt.scope_options(scopes, members),
            chosen,
            alert(problems, "warn"),
            None if delivery is None else delivery.model_dump(mode="json"),
        )

    @app.callback(
        Output(Ids.STATS_ASOF, "children"),
        Output(Ids.STATS_TABLE, "children"),
        Output(DeliveryStatsIds.TABLE, "children"),
        Input(Ids.STATS_SCOPE, "value"),
        Input(Ids.STATS_DATA, "data"),
        State(DeliveryStatsIds.DATA, "data"),
    )
    def show(
        scope: str | None, data: list[dict[str, Any]] | None, delivery: dict[str, Any] | None
    ) -> tuple[Any, Any, Any]:
        if data is None:
            return html.Div("loading…", className="asof"), no_update, no_update
        stats = pick([WindowStatistics.from_json(d) for d in data], scope)
        windows = None if delivery is None else DeliveryWindowList.model_validate(delivery)
        return (
            [render_asof(stats, time.time()), coverage_note(stats)],
            render_table(stats),
            render_delivery_windows(windows, scope),
        )


def _delivery(provider: object) -> DeliveryWindowList | None:
    """The delivery latency windows, from a provider that serves them (the demo does not)."""
    if not isinstance(provider, DeliveryWindowsProvider):
        return None
    return provider.delivery_windows()


PAGE = ConsolePage(PATH, TITLE, "▦", layout, group="Traffic")
