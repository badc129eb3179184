"""Delivery: latency and loss (console/pages/delivery_latency.py), the canary matrix (issue 33
item 3, ADR 049), accounting and slow consumers (console/pages/delivery_accounting.py).

Canaries: rows are receivers, columns publishers: each cell is the age of the publisher's last
canary at the receiver and its latency, red when the pair is stale (no canary for the stale
time). Below, the admin API's own probe on each member's client port. Data:
``GET /api/v1/delivery/canaries``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import Child, alert, attrs, card, page_header, table
from ..figures import latency_figure
from ..ids import Ids
from ..polling import paced
from ..provider import ProviderError
from . import ConsolePage, Providers
from .delivery_accounting import AccountingProvider, render_accounting, render_offenders
from .delivery_latency import LatencyProvider, extend_history, render_latency, render_legs

PATH = "delivery"
TITLE = "Delivery"
REFRESH_MS = 2000


class DeliveryIds(StrEnum):
    ALERT = "delivery-alert"
    MATRIX = "delivery-matrix"
    PROBES = "delivery-probes"
    ACCOUNTING = "delivery-accounting"
    OFFENDERS = "delivery-offenders"
    LATENCY = "delivery-latency"
    LATENCY_CHART = "delivery-latency-chart"
    LATENCY_HISTORY = "delivery-latency-history"
    LEGS = "delivery-legs"
    INTERVAL = "delivery-interval"


@runtime_checkable
class DeliveryProvider(Protocol):
    def canaries(self) -> dict[str, Any]: ...


def cell_text(pair: Mapping[str, Any] | None) -> str:
    """``0.42 s ago · 1.20 ms``; ``no canary yet``; ``—`` when the receiver was not read."""
    if pair is None:
        return fmt.DASH
    age = pair.get("age_seconds")
    if age is None:
        return "no canary yet"
    return f"{fmt.duration(age)} ago · {fmt.latency(pair.get('latency_seconds'))}"


def render_matrix(document: Mapping[str, Any]) -> Component:
    """The member-by-member table (receivers down, publishers across)."""
    members = list(document.get("members", []))
    cells = {(p["publisher"], p["receiver"]): p for p in document.get("pairs", [])}
    unreachable = {r["member"] for r in document.get("receivers", []) if not r.get("reachable")}
    rows: list[list[Child]] = []
    for receiver in members:
        row: list[Child] = [html.Strong(receiver)]
        for publisher in members:
            pair = cells.get((publisher, receiver))
            stale = pair is not None and bool(pair.get("stale"))
            text = "not readable" if receiver in unreachable else cell_text(pair)
            row.append(
                html.Span(
                    text,
                    className="canary-cell canary-stale" if stale else "canary-cell",
                    **attrs({"data-pair": f"{publisher}->{receiver}", "data-stale": stale}),
                )
            )
        rows.append(row)
    header: list[Child] = ["receiver \\ publisher", *members]
    return table(header, rows, class_name="canary-matrix", empty="no member to show")


def render_probes(document: Mapping[str, Any]) -> Component:
    rows: list[list[Child]] = []
    for probe in document.get("probes", []):
        age = probe.get("age_seconds")
        state = "stale" if probe.get("stale") else "ok"
        rows.append(
            [
                html.Strong(probe["member"]),
                "connected" if probe.get("connected") else "not connected",
                "no canary yet" if age is None else f"{fmt.duration(age)} ago",
                fmt.latency(probe.get("latency_seconds")),
                fmt.count(probe.get("received")),
                html.Span(state, className="canary-stale" if state == "stale" else ""),
            ]
        )
    return table(
        ["member", "probe", "last canary", "latency", "received", "state"],
        rows,
        class_name="canary-probes",
        empty="no probe yet (the admin API opens one per member within a few seconds)",
    )


def render_stalled(document: Mapping[str, Any]) -> list[Component]:
    stalled = list(document.get("stalled", []))
    if not stalled:
        return []
    return alert([f"canaries stalled: {', '.join(stalled)}"], level="warning")


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "What the subscribers got and how late: latency and loss, canaries through "
                "every member's delivery path, where every delivery went, slow consumers",
            ),
            card(
                [
                    html.H2("Latency and loss, the members' last 60 s"),
                    html.P(
                        "what the subscribers measured (publish at the ingress member to receipt)"
                        " and the loss they reported; the chart holds what this page has read "
                        "since it was opened",
                        className="muted",
                    ),
                    html.Div(id=DeliveryIds.LATENCY),
                    dcc.Graph(
                        id=DeliveryIds.LATENCY_CHART,
                        config={"displayModeBar": False, "responsive": True},
                    ),
                    html.H3("Where the time goes: the server's own legs"),
                    html.Div(id=DeliveryIds.LEGS),
                    dcc.Store(id=DeliveryIds.LATENCY_HISTORY, data=[]),
                ]
            ),
            html.Div(id=DeliveryIds.ALERT, className="alerts"),
            card([html.H2("Canary matrix"), html.Div(id=DeliveryIds.MATRIX)]),
            card([html.H2("The admin API's probes"), html.Div(id=DeliveryIds.PROBES)]),
            card([html.H2("Accounting"), html.Div(id=DeliveryIds.ACCOUNTING)]),
            card([html.H2("Slow consumers, by client"), html.Div(id=DeliveryIds.OFFENDERS)]),
            dcc.Interval(id=DeliveryIds.INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-delivery",
    )


def register(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(DeliveryIds.MATRIX, "children"),
        Output(DeliveryIds.PROBES, "children"),
        Output(DeliveryIds.ALERT, "children"),
        Input(DeliveryIds.INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        running=paced(DeliveryIds.INTERVAL),
    )
    def refresh(_n: int | None, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        if not isinstance(provider, DeliveryProvider):
            return [], [], alert(["this console has no admin API behind it"])
        try:
            document = provider.canaries()
        except ProviderError as exc:
            return no_update, no_update, alert([exc])
        return render_matrix(document), render_probes(document), render_stalled(document)

    @app.callback(
        Output(DeliveryIds.LATENCY, "children"),
        Output(DeliveryIds.LEGS, "children"),
        Output(DeliveryIds.LATENCY_CHART, "figure"),
        Output(DeliveryIds.LATENCY_HISTORY, "data"),
        Input(DeliveryIds.INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        State(DeliveryIds.LATENCY_HISTORY, "data"),
        running=paced(DeliveryIds.INTERVAL),
    )
    def refresh_latency(
        _n: int | None, token: str | None, history: list[dict[str, Any]] | None
    ) -> tuple[Any, ...]:
        provider = providers(token)
        if not isinstance(provider, LatencyProvider):
            return [], [], no_update, no_update
        try:
            document = provider.delivery_latency()
        except ProviderError as exc:
            return alert([exc]), no_update, no_update, no_update
        points = extend_history(history, document, time.time())
        return render_latency(document), render_legs(document), latency_figure(points), points

    @app.callback(
        Output(DeliveryIds.ACCOUNTING, "children"),
        Output(DeliveryIds.OFFENDERS, "children"),
        Input(DeliveryIds.INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        running=paced(DeliveryIds.INTERVAL),
    )
    def refresh_accounting(_n: int | None, token: str | None) -> tuple[Any, Any]:
        provider = providers(token)
        if not isinstance(provider, AccountingProvider):
            return [], []
        try:
            return (
                render_accounting(provider.accounting()),
                render_offenders(provider.slow_consumer_offenders()),
            )
        except ProviderError as exc:
            return alert([exc]), no_update


PAGE = ConsolePage(PATH, TITLE, "✓", layout, group="Live")
