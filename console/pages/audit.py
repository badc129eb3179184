"""Audit: the most recent admin actions (every mutating request to the admin API)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import alert, card, page_header, pill, table
from ..ids import Ids
from ..provider import AuditFilter, AuditRow, ProviderError
from . import ConsolePage, Providers

PATH = "audit"
TITLE = "Audit"
REFRESH_MS = 5000
LIMIT = 100
_OUTCOME_KIND = {"succeeded": "good", "denied": "warn", "failed": "bad"}


OUTCOMES = ("succeeded", "denied", "failed")
#: the "since" choices: label -> seconds back from now (0: any time)
SINCE = {"any time": 0, "last hour": 3600, "last 24 h": 86_400, "last 7 days": 604_800}
ANY = ""


def _filters() -> Component:
    """The API's filters (``GET /api/v1/audit``): actor, action, outcome, since."""
    return html.Div(
        [
            *(
                dcc.Input(id=id_, type="search", placeholder=hint, debounce=0.3, className="input")
                for id_, hint in (
                    (Ids.AUDIT_ACTOR, "who (token name)"),
                    (Ids.AUDIT_ACTION, "action, e.g. tokens.create"),
                )
            ),
            dcc.Dropdown(
                id=Ids.AUDIT_OUTCOME,
                options=[{"label": "any outcome", "value": ANY}]
                + [{"label": o, "value": o} for o in OUTCOMES],
                value=ANY,
                clearable=False,
                className="member-select",
            ),
            dcc.Dropdown(
                id=Ids.AUDIT_SINCE,
                options=[{"label": label, "value": seconds} for label, seconds in SINCE.items()],
                value=0,
                clearable=False,
                className="member-select",
            ),
        ],
        className="controls audit-filters",
    )


def audit_filter(
    actor: str | None, action: str | None, outcome: str | None, since: int | None, now: float
) -> AuditFilter:
    """The filter the controls describe (blank text and "any" leave a filter out)."""
    start = None
    if since:
        start = datetime.fromtimestamp(now - since, UTC).isoformat()
    return AuditFilter(
        actor=(actor or "").strip() or None,
        action=(action or "").strip() or None,
        outcome=outcome or None,
        since=start,
    )


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                f"The last {LIMIT} admin actions matching the filters, newest first",
                html.Button("Refresh", id=Ids.AUDIT_REFRESH, className="button", n_clicks=0),
            ),
            html.Div(id=Ids.AUDIT_ALERT, className="alerts"),
            _filters(),
            card(html.Div(id=Ids.AUDIT_TABLE, className="table-scroll"), class_name="flush"),
            dcc.Interval(id=Ids.AUDIT_INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-audit",
    )


def render_audit(entries: Sequence[AuditRow]) -> Component:
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
        empty="no admin actions match the filters",
    )


def register(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.AUDIT_TABLE, "children"),
        Output(Ids.AUDIT_ALERT, "children"),
        Input(Ids.AUDIT_REFRESH, "n_clicks"),
        Input(Ids.AUDIT_INTERVAL, "n_intervals"),
        Input(Ids.AUDIT_ACTOR, "value"),
        Input(Ids.AUDIT_ACTION, "value"),
        Input(Ids.AUDIT_OUTCOME, "value"),
        Input(Ids.AUDIT_SINCE, "value"),
        State(Ids.TOKEN, "data"),
    )
    def listing(
        _clicks: int,
        _n: int | None,
        actor: str | None,
        action: str | None,
        outcome: str | None,
        since: int | None,
        token: str | None,
    ) -> tuple[Any, ...]:
        provider = providers(token)
        wanted = audit_filter(actor, action, outcome, since, time.time())
        try:
            entries = provider.audit(LIMIT, wanted)
        except ProviderError as exc:
            return no_update, alert([exc])
        return render_audit(entries), []


PAGE = ConsolePage(PATH, TITLE, "☰", layout, group="Admin", role="admin")
