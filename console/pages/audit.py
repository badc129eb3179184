"""Audit: the most recent admin actions (every mutating request to the admin API)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import alert, card, page_header, pill, table
from ..ids import Ids
from ..provider import AuditEntry, ProviderError
from . import Page, Providers

PATH = "audit"
TITLE = "Audit"
REFRESH_MS = 5000
LIMIT = 100
_OUTCOME_KIND = {"succeeded": "good", "denied": "warn", "failed": "bad"}


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                f"The last {LIMIT} admin actions, newest first",
                html.Button("Refresh", id=Ids.AUDIT_REFRESH, className="button", n_clicks=0),
            ),
            html.Div(id=Ids.AUDIT_ALERT, className="alerts"),
            card(html.Div(id=Ids.AUDIT_TABLE, className="table-scroll"), class_name="flush"),
            dcc.Interval(id=Ids.AUDIT_INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-audit",
    )


def render_audit(entries: Sequence[AuditEntry]) -> Component:
    rows: list[list[Any]] = []
    props: list[dict[str, Any]] = []
    for entry in entries:
        rows.append(
            [
                fmt.iso_time(entry.at),
                html.Span(entry.actor or "anonymous", className="" if entry.actor else "muted"),
                entry.role or fmt.DASH,
                html.Code(entry.action),
                entry.target or fmt.DASH,
                pill(f"{entry.outcome} {entry.status}", _OUTCOME_KIND.get(entry.outcome, "muted")),
                html.Span(
                    entry.detail or "",
                    className="muted small" if entry.outcome == "succeeded" else "error-text",
                    title=entry.detail or "",
                ),
            ]
        )
        props.append({"data-action": entry.action, "data-outcome": entry.outcome})
    return table(
        ["when", "who", "role", "action", "target", "outcome", "detail"],
        rows,
        row_props=props,
        empty="no admin actions recorded yet",
    )


def register(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.AUDIT_TABLE, "children"),
        Output(Ids.AUDIT_ALERT, "children"),
        Input(Ids.AUDIT_REFRESH, "n_clicks"),
        Input(Ids.AUDIT_INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
    )
    def listing(_clicks: int, _n: int | None, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        try:
            entries = provider.audit(LIMIT)
        except ProviderError as exc:
            return no_update, alert([exc])
        return render_audit(entries), []


PAGE = Page(PATH, TITLE, "☰", layout)
