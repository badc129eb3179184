"""Audit: the admin actions (every mutating request to the admin API, sign-ins and the CLI's
changes), filtered by actor, action, outcome and time (a relative "since" or an absolute UTC
range), 100 rows a page, newest first; "Older" / "Newer" page through (the API's offset)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.ops.api.audit import AuditOut

from .. import format as fmt
from ..components import alert, card, page_header, pill, table
from ..ids import Ids
from ..polling import paced
from ..provider import AuditFilter, ProviderError
from ..url_state import UrlField, url_store
from ..url_state import register as register_url
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


def _range_inputs() -> list[Component]:
    return [
        dcc.Input(
            id=id_, type="search", placeholder=hint, debounce=0.5, className="input audit-range"
        )
        for id_, hint in ((Ids.AUDIT_FROM, "from, UTC"), (Ids.AUDIT_TO, "to, UTC"))
    ]


def _pager() -> Component:
    return html.Div(
        [
            html.Button("Newer", id=Ids.AUDIT_NEWER, className="button small", n_clicks=0),
            html.Span(id=Ids.AUDIT_SHOWN, className="muted small"),
            html.Button("Older", id=Ids.AUDIT_OLDER, className="button small", n_clicks=0),
            dcc.Store(id=Ids.AUDIT_OFFSET, data=0),
            dcc.Store(id=Ids.AUDIT_COUNT, data=0),  # rows on the page shown
        ],
        className="controls audit-pager",
    )


def parse_moment(text: str | None, name: str) -> str | None:
    """An ISO 8601 time typed in a range field (no zone: UTC) as the API's text; blank: None.
    Raises ValueError naming the field."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{name}: {text!r} is not a time (YYYY-MM-DD HH:MM, UTC)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.isoformat()


def next_offset(offset: int | None, shown: int, direction: str) -> int:
    """The first row of the older or newer page (never below 0; no older page after a short
    one: it was the last)."""
    start = offset or 0
    if direction == "older":
        return start + LIMIT if shown >= LIMIT else start
    return max(0, start - LIMIT)


def _filters() -> Component:
    """The API's filters (``GET /api/v1/audit``): actor, action, outcome, since / from-to."""
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
            *_range_inputs(),
        ],
        className="controls audit-filters",
    )


def audit_filter(
    actor: str | None,
    action: str | None,
    outcome: str | None,
    since: int | None,
    now: float,
    start: str | None = None,
    end: str | None = None,
) -> AuditFilter:
    """The filter the controls describe (blank text and "any" leave a filter out); a "from"
    time replaces the relative "since". Raises ValueError for a range field that is no time."""
    begin = parse_moment(start, "from")
    if begin is None and since:
        begin = datetime.fromtimestamp(now - since, UTC).isoformat()
    return AuditFilter(
        actor=(actor or "").strip() or None,
        action=(action or "").strip() or None,
        outcome=outcome or None,
        since=begin,
        until=parse_moment(end, "to"),
    )


def layout() -> Component:
    return html.Div(
        [
            url_store(PATH),
            page_header(
                TITLE,
                f"Admin actions and sign-ins matching the filters, newest first, {LIMIT} a page",
                html.Button("Refresh", id=Ids.AUDIT_REFRESH, className="button", n_clicks=0),
            ),
            html.Div(id=Ids.AUDIT_ALERT, className="alerts"),
            _filters(),
            card(html.Div(id=Ids.AUDIT_TABLE, className="table-scroll"), class_name="flush"),
            _pager(),
            dcc.Interval(id=Ids.AUDIT_INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-audit",
    )


def render_audit(entries: Sequence[AuditOut]) -> Component:
    rows: list[list[Any]] = []
    props: list[dict[str, Any]] = []
    for entry in entries:
        rows.append(
            [
                fmt.moment(entry.at),
                html.Span(entry.actor or "anonymous", className="" if entry.actor else "muted"),
                str(entry.role) if entry.role else fmt.DASH,
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


#: the filters in the URL (``/console/audit?who=olivia&outcome=denied``)
URL_FIELDS = (
    UrlField("who", Ids.AUDIT_ACTOR, None),
    UrlField("action", Ids.AUDIT_ACTION, None),
    UrlField("outcome", Ids.AUDIT_OUTCOME, ANY, [ANY, *OUTCOMES]),
    UrlField("since", Ids.AUDIT_SINCE, 0, list(SINCE.values())),
    UrlField("from", Ids.AUDIT_FROM, None),
    UrlField("to", Ids.AUDIT_TO, None),
)
_FILTERS = (
    Ids.AUDIT_ACTOR, Ids.AUDIT_ACTION, Ids.AUDIT_OUTCOME, Ids.AUDIT_SINCE, Ids.AUDIT_FROM,
    Ids.AUDIT_TO,
)  # fmt: skip


def register(app: Dash, providers: Providers) -> None:
    register_url(app, PATH, URL_FIELDS)

    @app.callback(
        Output(Ids.AUDIT_TABLE, "children"),
        Output(Ids.AUDIT_ALERT, "children"),
        Output(Ids.AUDIT_SHOWN, "children"),
        Output(Ids.AUDIT_COUNT, "data"),
        Input(Ids.AUDIT_REFRESH, "n_clicks"),
        Input(Ids.AUDIT_INTERVAL, "n_intervals"),
        Input(Ids.AUDIT_OFFSET, "data"),
        *(Input(id_, "value") for id_ in _FILTERS),
        State(Ids.TOKEN, "data"),
        running=paced(Ids.AUDIT_INTERVAL),
    )
    def listing(
        _clicks: int,
        _n: int | None,
        offset: int | None,
        actor: str | None,
        action: str | None,
        outcome: str | None,
        since: int | None,
        start: str | None,
        end: str | None,
        token: str | None,
    ) -> tuple[Any, ...]:
        provider = providers(token)
        try:
            wanted = audit_filter(actor, action, outcome, since, time.time(), start, end)
        except ValueError as exc:
            return no_update, alert([str(exc)]), no_update, no_update
        first = offset or 0
        try:
            entries = provider.audit(LIMIT, wanted, first)
        except ProviderError as exc:
            return no_update, alert([exc]), no_update, no_update
        shown = f"rows {first + 1}-{first + len(entries)}" if entries else "no rows"
        if not entries and first:
            shown = f"no rows after row {first}"
        return render_audit(entries), [], shown, len(entries)

    @app.callback(
        Output(Ids.AUDIT_OFFSET, "data"),
        Input(Ids.AUDIT_OLDER, "n_clicks"),
        Input(Ids.AUDIT_NEWER, "n_clicks"),
        *(Input(id_, "value") for id_ in _FILTERS),
        State(Ids.AUDIT_OFFSET, "data"),
        State(Ids.AUDIT_COUNT, "data"),
        prevent_initial_call=True,
    )
    def page(*values: Any) -> int:
        """Older / Newer move by a page; a changed filter starts again at the newest."""
        offset, count = values[-2], values[-1]
        trigger = ctx.triggered_id
        if trigger == Ids.AUDIT_OLDER:
            return next_offset(offset, int(count or 0), "older")
        if trigger == Ids.AUDIT_NEWER:
            return next_offset(offset, LIMIT, "newer")
        return 0


PAGE = ConsolePage(PATH, TITLE, "☰", layout, group="Admin", role="admin")
