"""Watched subjects: per-pattern rates, subscribers and subjects; watch or stop watching a pattern.

The table shows the cluster (the members summed per pattern) or one member (with the 1-minute
average and 15-minute maximum of the incoming rate). The form calls the admin API's
``POST``/``DELETE /watched-subjects`` (operator role; the answer says what each member did).
Under it, the windows the statistics pipeline stored for one pattern
(``GET /watched-subjects/statistics``, ADR 030), for the scope chosen above, drawn like the
Statistics page (partial windows marked).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from dash import Dash, Input, Output, State, callback_context, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.ops.api.statistics import WatchedWindowStatList

from .. import format as fmt
from ..components import (
    CLUSTER_SCOPE,
    Child,
    alert,
    card,
    page_header,
    scope_dropdown,
    scope_options,
    table,
    unreachable_members,
)
from ..http_provider import window_statistics
from ..ids import Ids, OpsIds
from ..ops_provider import OpsProvider
from ..polling import paced
from ..provider import ProviderError, WindowStatistics
from . import OPERATOR_ONLY, ConsolePage, Providers
from .statistics import coverage_note, pick, render_asof, render_table

PATH = "watched"
TITLE = "Watched subjects"
REFRESH_MS = 2000
CLUSTER = CLUSTER_SCOPE
RATES: Final = (
    ("incoming_messages_per_second", "in msg/s"),
    ("outgoing_messages_per_second", "out msg/s"),
    ("incoming_bytes_per_second", "in bytes/s"),
    ("outgoing_bytes_per_second", "out bytes/s"),
)
#: a pattern's six indicators in their documented order (metrics/watched.py WATCH_NAMES; the
#: console shares names, not the metrics code)
PATTERN_INDICATORS: Final = (*(name for name, _ in RATES), "subscribers", "subjects")
HEADER: Final = [
    "pattern",
    *(label for _, label in RATES),
    "subscribers",
    "in total",
    "out total",
    "in msg/s 1m avg",
    "in msg/s 15m max",
]


def _number(value: float | None, indicator: str = "subscribers") -> str:
    """The console's one formatter (``format.compact``): bytes in KiB/MiB, rates with SI
    prefixes, counts with separators (the bytes were shown raw, ``98,633``: issue 34)."""
    return fmt.compact(None if value is None else float(value), indicator)


def _window(pattern: Mapping[str, Any], window: str, stat: str) -> float | None:
    windows = pattern["indicators"]["incoming_messages_per_second"].get("windows", {})
    value = windows.get(window, {}).get(stat)
    return None if value is None else float(value)


def watched_rows(document: Mapping[str, Any], scope: str) -> list[list[str]]:
    """One row of text per pattern of ``scope`` (the cluster or a member) in a
    ``/watched-subjects`` answer, in the order the patterns were added."""
    if scope == CLUSTER:
        return [
            [
                p["pattern"],
                *(_number(p["current"].get(name, 0.0), name) for name, _ in RATES),
                _number(p["subscribers"]),
                _number(p["totals"].get("messages_in_total", 0)),
                _number(p["totals"].get("messages_out_total", 0)),
                fmt.DASH,
                fmt.DASH,
            ]
            for p in document.get("cluster", [])
        ]
    for member in document.get("members", []):
        if member.get("member") == scope:
            return [
                [
                    p["pattern"],
                    *(_number(p["indicators"][name]["current"], name) for name, _ in RATES),
                    _number(p["subscribers"]),
                    _number(p["totals"].get("messages_in_total", 0)),
                    _number(p["totals"].get("messages_out_total", 0)),
                    _number(_window(p, "1m", "avg"), "incoming_messages_per_second"),
                    _number(_window(p, "15m", "max"), "incoming_messages_per_second"),
                ]
                for p in member.get("patterns", [])
            ]
    return []


def render_watched(rows: list[list[str]]) -> Component:
    cells: list[list[Child]] = [[html.Code(row[0]), *row[1:]] for row in rows]
    props = [{"data-pattern": row[0]} for row in rows]
    return table(HEADER, cells, row_props=props, empty="no pattern watched")


def stored_windows(answer: Mapping[str, Any], scope: str) -> WindowStatistics | None:
    """The ``scope`` (the cluster or a member's name) of a ``/watched-subjects/statistics``
    answer."""
    wanted = CLUSTER if scope == CLUSTER else f"node:{scope}"
    return pick(window_statistics(WatchedWindowStatList.model_validate(answer)), wanted)


def render_stored(pattern: str | None, stats: WindowStatistics | None, now: float) -> Component:
    """A pattern's stored windows: as-of line, partial-window note, the six indicators."""
    if not pattern:
        return html.Div("choose a pattern to see its stored windows", className="empty")
    if stats is None:
        return html.Div(
            f"no stored windows for {pattern} in this scope yet: the statistics job stores "
            "them once the archive holds the pattern's seconds (Jobs page)",
            className="empty",
        )
    return html.Div(
        [render_asof(stats, now), coverage_note(stats), render_table(stats, PATTERN_INDICATORS)],
        className="table-scroll",
    )


def change_text(answer: Mapping[str, Any]) -> str:
    """``/Stocks/*: watched on push-1, already_watched on push-2`` from a change's answer."""
    outcomes = ", ".join(f"{m['outcome']} on {m['member']}" for m in answer.get("members", []))
    return f"{answer.get('pattern')}: {outcomes or 'no member'}"


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Per-pattern rates, subscribers and totals. In a pattern, * is one segment; "
                "a last * also any deeper path",
                scope_dropdown(OpsIds.WATCHED_SCOPE),
            ),
            html.Div(id=OpsIds.WATCHED_ALERT, className="alerts"),
            card(
                [
                    dcc.Input(
                        id=OpsIds.WATCHED_PATTERN,
                        type="text",
                        placeholder="/Stocks/NYSE/*",
                        debounce=False,
                    ),
                    html.Button("Watch", id=OpsIds.WATCHED_ADD, className="button"),
                    html.Button("Stop watching", id=OpsIds.WATCHED_REMOVE, className="button"),
                    html.Span(id=OpsIds.WATCHED_RESULT, className="result"),
                ],
                class_name=f"watched-form {OPERATOR_ONLY}",
            ),
            card(html.Div(id=OpsIds.WATCHED_TABLE)),
            card(
                [
                    html.Div(
                        [
                            html.Span("Stored windows of", className="control-label"),
                            dcc.Dropdown(
                                id=OpsIds.WATCHED_HISTORY,
                                options=[],
                                placeholder="pattern",
                                style={"minWidth": "16rem"},
                            ),
                        ],
                        className="controls",
                    ),
                    html.Div(id=OpsIds.WATCHED_STATS),
                ],
                class_name="flush",
            ),
            dcc.Interval(id=OpsIds.WATCHED_INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-watched",
    )


def register(app: Dash, providers: Providers) -> None:
    _register_stored(app, providers)

    @app.callback(
        Output(OpsIds.WATCHED_TABLE, "children"),
        Output(OpsIds.WATCHED_SCOPE, "options"),
        Output(OpsIds.WATCHED_ALERT, "children"),
        Output(OpsIds.WATCHED_HISTORY, "options"),
        Input(OpsIds.WATCHED_INTERVAL, "n_intervals"),
        Input(OpsIds.WATCHED_SCOPE, "value"),
        State(Ids.TOKEN, "data"),
        running=paced(OpsIds.WATCHED_INTERVAL),
    )
    def refresh(_n: int | None, scope: str | None, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        if not isinstance(provider, OpsProvider):
            return [], no_update, alert(["this console has no admin API behind it"]), []
        try:
            document = provider.watched_subjects()
        except ProviderError as exc:
            return no_update, no_update, alert([exc]), no_update
        rows = watched_rows(document, scope or CLUSTER)
        patterns = [p["pattern"] for p in document.get("cluster", [])]
        return (
            render_watched(rows),
            scope_options(document),
            unreachable_members(document),
            patterns,
        )

    @app.callback(
        Output(OpsIds.WATCHED_RESULT, "children"),
        Input(OpsIds.WATCHED_ADD, "n_clicks"),
        Input(OpsIds.WATCHED_REMOVE, "n_clicks"),
        State(OpsIds.WATCHED_PATTERN, "value"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def change(
        _add: int | None, _remove: int | None, pattern: str | None, token: str | None
    ) -> Any:
        provider = providers(token)
        if not isinstance(provider, OpsProvider):
            return "this console has no admin API behind it"
        if not pattern:
            return "type a pattern first"
        add = callback_context.triggered_id == OpsIds.WATCHED_ADD
        try:
            answer = provider.watch(pattern) if add else provider.unwatch(pattern)
        except ProviderError as exc:
            return str(exc)  # "409 Conflict: ... WatchedSubjects.MaxPatterns .."
        return change_text(answer)


def _register_stored(app: Dash, providers: Providers) -> None:
    """The stored-windows card: the chosen pattern's windows from the statistics pipeline."""

    @app.callback(
        Output(OpsIds.WATCHED_STATS, "children"),
        Input(OpsIds.WATCHED_HISTORY, "value"),
        Input(OpsIds.WATCHED_SCOPE, "value"),
        State(Ids.TOKEN, "data"),
    )
    def stored(pattern: str | None, scope: str | None, token: str | None) -> Any:
        provider = providers(token)
        if not pattern or not isinstance(provider, OpsProvider):
            return render_stored(None, None, time.time())
        try:
            answer = provider.watched_statistics(pattern)
        except ProviderError as exc:
            return alert([exc])
        return render_stored(pattern, stored_windows(answer, scope or CLUSTER), time.time())


PAGE = ConsolePage(PATH, "Watched", "◎", layout, group="Traffic")
