"""Sessions: a searchable, paged list of client sessions; disconnect one (with confirmation)."""

from __future__ import annotations

import json
import time
from typing import Any

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import alert, attrs, card, notice, page_header, table
from ..ids import Ids, disconnect_id
from ..provider import ProviderError, SessionPageView
from . import OPERATOR_ONLY, ConsolePage, Providers

PATH = "sessions"
TITLE = "Sessions"
PAGE_SIZE = 15
ALL_MEMBERS = "*"


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Connected clients on every member",
                html.Button("Refresh", id=Ids.SESSIONS_REFRESH, className="button", n_clicks=0),
            ),
            html.Div(id=Ids.SESSIONS_ALERT, className="alerts"),
            html.Div(id=Ids.SESSIONS_RESULT, className="alerts"),
            html.Div(
                [
                    dcc.Input(
                        id=Ids.SESSIONS_SEARCH,
                        type="search",
                        placeholder="search id, remote address or subject",
                        debounce=0.3,
                        className="input grow",
                    ),
                    dcc.Dropdown(
                        id=Ids.SESSIONS_MEMBER,
                        options=[{"label": "all members", "value": ALL_MEMBERS}],
                        value=ALL_MEMBERS,
                        clearable=False,
                        className="member-select",
                    ),
                ],
                className="controls",
            ),
            card(html.Div(id=Ids.SESSIONS_TABLE, className="table-scroll"), class_name="flush"),
            html.Div(
                [
                    html.Button("‹ Previous", id=Ids.SESSIONS_PREV, className="button", n_clicks=0),
                    html.Span(id=Ids.SESSIONS_PAGER, className="pager-label"),
                    html.Button("Next ›", id=Ids.SESSIONS_NEXT, className="button", n_clicks=0),
                ],
                className="pager",
            ),
            dcc.Store(id=Ids.SESSIONS_PAGE, data=0),
            dcc.Store(id=Ids.SESSIONS_PENDING, data=None),
            dcc.Store(id=Ids.SESSIONS_VERSION, data=0),
            dcc.ConfirmDialog(id=Ids.SESSIONS_CONFIRM, message=""),
        ],
        className="page page-sessions",
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def render_sessions(page: SessionPageView, now: float) -> Component:
    rows: list[list[Any]] = []
    props: list[dict[str, Any]] = []
    for session in page.items:
        since = session.connected_since
        subjects = ", ".join(session.subjects[:3]) + (
            f" +{len(session.subjects) - 3}" if len(session.subjects) > 3 else ""
        )
        rows.append(
            [
                html.Code(session.id),
                session.member,
                session.remote,
                html.Span(
                    fmt.age(max(0.0, now - since)).replace(" ago", "") if since else fmt.DASH,
                    title=fmt.timestamp(since),
                ),
                html.Span(subjects or fmt.DASH, title="\n".join(session.subjects)),
                fmt.count(session.messages_in),
                fmt.compact(session.bytes_in, "bytes"),
                fmt.compact(session.bytes_out, "bytes"),
                html.Button(
                    "Disconnect",
                    id=disconnect_id(session.member, session.id),
                    className=f"button danger small {OPERATOR_ONLY}",
                    n_clicks=0,
                ),
            ]
        )
        props.append({"data-session": session.id, "data-member": session.member})
    return table(
        ["session", "member", "remote", "connected", "subjects", "msgs in", "in", "out", ""],
        rows,
        row_props=props,
        empty="no sessions match",
    )


def member_options(page: SessionPageView, known: list[str]) -> list[dict[str, str]]:
    names = sorted({*known, *(s.member for s in page.items), *page.errors})
    return [{"label": "all members", "value": ALL_MEMBERS}] + [
        {"label": n, "value": n} for n in names
    ]


def pending_from_trigger(triggered_id: Any, value: Any) -> dict[str, str] | None:
    """The (member, session) of a clicked Disconnect button (None for a re-render)."""
    if not isinstance(triggered_id, dict) or not value:
        return None
    member, _, session = str(triggered_id.get("index", "")).partition("|")
    if not member or not session:
        return None
    return {"member": member, "session": session}


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    _wire_listing(app, providers)
    _wire_actions(app, providers)


def _wire_listing(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.SESSIONS_PAGE, "data"),
        Input(Ids.SESSIONS_PREV, "n_clicks"),
        Input(Ids.SESSIONS_NEXT, "n_clicks"),
        Input(Ids.SESSIONS_SEARCH, "value"),
        Input(Ids.SESSIONS_MEMBER, "value"),
        State(Ids.SESSIONS_PAGE, "data"),
        prevent_initial_call=True,
    )
    def paging(_prev: int, _next: int, _search: str, _member: str, page: int | None) -> int:
        if ctx.triggered_id == Ids.SESSIONS_PREV:
            return max(0, (page or 0) - 1)
        if ctx.triggered_id == Ids.SESSIONS_NEXT:
            return (page or 0) + 1  # clamped by the listing
        return 0  # a new search or member starts at the first page

    @app.callback(
        Output(Ids.SESSIONS_TABLE, "children"),
        Output(Ids.SESSIONS_PAGER, "children"),
        Output(Ids.SESSIONS_MEMBER, "options"),
        Output(Ids.SESSIONS_PREV, "disabled"),
        Output(Ids.SESSIONS_NEXT, "disabled"),
        Output(Ids.SESSIONS_ALERT, "children"),
        Input(Ids.SESSIONS_PAGE, "data"),
        Input(Ids.SESSIONS_REFRESH, "n_clicks"),
        Input(Ids.SESSIONS_VERSION, "data"),
        State(Ids.SESSIONS_SEARCH, "value"),
        State(Ids.SESSIONS_MEMBER, "value"),
        State(Ids.SESSIONS_MEMBER, "options"),
        State(Ids.TOKEN, "data"),
    )
    def listing(
        page: int | None,
        _refresh: int,
        version: int | None,
        search: str | None,
        member: str | None,
        options: list[dict[str, str]] | None,
        token: str | None,
    ) -> tuple[Any, ...]:
        provider = providers(token)
        chosen = None if member in (None, ALL_MEMBERS) else member
        try:
            result = provider.sessions(search or "", chosen, (page or 0) * PAGE_SIZE, PAGE_SIZE)
            if not result.items and result.total and page:  # past the end: show the last page
                last = fmt.clamp_page(page, PAGE_SIZE, result.total)
                result = provider.sessions(search or "", chosen, last * PAGE_SIZE, PAGE_SIZE)
        except ProviderError as exc:
            return no_update, no_update, no_update, no_update, no_update, alert([exc])
        known = [o["value"] for o in options or [] if o["value"] != ALL_MEMBERS]
        problems: list[ProviderError | str] = [
            f"member {m} could not be read: {e}" for m, e in sorted(result.errors.items())
        ]
        label = fmt.page_label(result.offset, result.limit, result.total, len(result.items))
        return (
            render_sessions(result, time.time()),
            label,
            member_options(result, known),
            result.offset == 0,
            result.offset + len(result.items) >= result.total,
            alert(problems),
        )


def _wire_actions(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.SESSIONS_PENDING, "data"),
        Output(Ids.SESSIONS_CONFIRM, "displayed"),
        Output(Ids.SESSIONS_CONFIRM, "message"),
        Input({"type": Ids.SESSIONS_DISCONNECT.value, "index": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def ask(_clicks: list[int]) -> tuple[Any, ...]:
        pending = pending_from_trigger(ctx.triggered_id, ctx.triggered[0]["value"])
        if pending is None:
            return no_update, no_update, no_update
        message = (
            f"Disconnect session {pending['session']} on member {pending['member']}?\n\n"
            "The client is closed with code 4003 (disconnected by operator) and may reconnect."
        )
        return pending, True, message

    @app.callback(
        Output(Ids.SESSIONS_VERSION, "data"),
        Output(Ids.SESSIONS_RESULT, "children"),
        Input(Ids.SESSIONS_CONFIRM, "submit_n_clicks"),
        State(Ids.SESSIONS_PENDING, "data"),
        State(Ids.SESSIONS_VERSION, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def disconnect(
        _submit: int, pending: dict[str, str] | None, version: int | None, token: str | None
    ) -> tuple[Any, ...]:
        if not pending:
            return no_update, no_update
        provider = providers(token)
        try:
            closed = provider.disconnect(pending["member"], pending["session"])
        except ProviderError as exc:
            return (version or 0) + 1, alert([exc])
        if not closed:
            text = f"session {pending['session']} was already gone on {pending['member']}"
            return (version or 0) + 1, notice(text, "warn")
        text = f"session {pending['session']} on {pending['member']} disconnected (code 4003)"
        return (version or 0) + 1, html.Div(
            notice(text, "success"), **attrs({"data-disconnected": json.dumps(pending)})
        )


PAGE = ConsolePage(PATH, TITLE, "⇄", layout, group="Live")
