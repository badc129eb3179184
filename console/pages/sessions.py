"""Clients (issue 35, ADR 050): a searchable, sortable, paged list of the cluster's client
sessions with every number the admin API gives for them (client id, transport, compression,
messages and bytes in and out, outbound buffer, delivery latency and loss once the client reports
them); the filters, order, page and opened client live in the URL's query so a view can be
shared. Click a client for its subscriptions, last frames (millisecond times) and slow-consumer
history; disconnect one (operator, with confirmation). The cluster's latest slow-consumer closes
are listed below the table."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.ops.api.sessions import SessionOut, SessionPage

from .. import format as fmt
from ..components import alert, attrs, card, notice, page_header, table
from ..ids import Ids, client_open_id, disconnect_id
from ..ops_provider import OpsProvider
from ..provider import ProviderError
from . import OPERATOR_ONLY, ConsolePage, Providers
from .trace import render_session

PATH = "sessions"
TITLE = "Clients"
PAGE_SIZE = 15
ALL_MEMBERS = "*"
ANY = "*"
SORTS = {
    "-connected_since": "newest first",
    "connected_since": "oldest first",
    "-messages_out": "most messages out",
    "-messages_in": "most messages in",
    "-bytes_out": "most bytes out",
    "-outbound_buffer_bytes": "largest outbound buffer",
    "client_id": "client id",
    "member": "member",
}
DEFAULT_SORT = "-connected_since"
SLOW_SHOWN = 10


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
                        placeholder="client id, remote address or /subject",
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
                    dcc.Dropdown(
                        id=Ids.SESSIONS_TRANSPORT,
                        options=[
                            {"label": "any transport", "value": ANY},
                            {"label": "WebSocket", "value": "websocket"},
                            {"label": "SSE", "value": "sse"},
                        ],
                        value=ANY,
                        clearable=False,
                        className="member-select",
                    ),
                    dcc.Dropdown(
                        id=Ids.SESSIONS_SORT,
                        options=[{"label": v, "value": k} for k, v in SORTS.items()],
                        value=DEFAULT_SORT,
                        clearable=False,
                        className="member-select",
                    ),
                    dcc.Checklist(
                        id=Ids.SESSIONS_INTERNAL,
                        options=[{"label": " internal probes", "value": "include"}],
                        value=[],
                        className="checklist",
                    ),
                ],
                className="controls",
            ),
            html.P(id=Ids.SESSIONS_HIDDEN, className="subtitle"),
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
            dcc.Store(id=Ids.SESSIONS_SELECTED, data=None),
            dcc.Store(id=Ids.SESSIONS_QUERY, data=None),
            card([html.H2("Client"), html.Div(id=Ids.SESSIONS_DETAIL)]),
            card([html.H2("Slow consumers"), html.Div(id=Ids.SESSIONS_SLOW)], class_name="flush"),
        ],
        className="page page-sessions",
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def _latency(session: SessionOut) -> str:
    """What the client reported of its deliveries; a dash when it reported nothing."""
    if session.delivery_latency_ms is None:
        return fmt.DASH
    lost = "" if session.lost_messages is None else f" · {session.lost_messages:,} lost"
    return f"{session.delivery_latency_ms:,.1f} ms{lost}"


def _subjects(session: SessionOut) -> html.Span:
    text = ", ".join(session.subjects[:3]) + (
        f" +{len(session.subjects) - 3}" if len(session.subjects) > 3 else ""
    )
    return html.Span(text or fmt.DASH, title="\n".join(session.subjects))


def _client_cell(session: SessionOut) -> html.Button:
    """The client id (or, when the client declared none, its session id in grey)."""
    label = session.client_id or session.id
    hint = "client id" if session.client_id else "no client id declared: the session id"
    return html.Button(
        [label, " · internal" if session.internal else ""],
        id=client_open_id(session.member, session.id),
        className="linklike" if session.client_id else "linklike muted",
        title=f"{hint}; session {session.id}: show its detail",
        n_clicks=0,
    )


def render_sessions(page: SessionPage, now: float) -> Component:
    rows: list[list[Any]] = []
    props: list[dict[str, Any]] = []
    for session in page.items:
        since = fmt.unix_of(session.connected_since)
        rows.append(
            [
                _client_cell(session),
                session.member,
                session.remote,
                "SSE" if session.transport == "sse" else "WebSocket",
                "deflate" if session.compression else "off",
                _subjects(session),
                fmt.count(session.messages_in),
                fmt.count(session.messages_out),
                fmt.compact(session.bytes_in, "bytes"),
                fmt.compact(session.bytes_out, "bytes"),
                fmt.compact(session.outbound_buffer_bytes, "bytes"),
                html.Span(
                    fmt.age(max(0.0, now - since)).replace(" ago", "") if since else fmt.DASH,
                    title=fmt.timestamp(since),
                ),
                _latency(session),
                html.Button(
                    "Disconnect",
                    id=disconnect_id(session.member, session.id),
                    className=f"button danger small {OPERATOR_ONLY}",
                    n_clicks=0,
                ),
            ]
        )
        props.append(
            {
                "data-session": session.id,
                "data-member": session.member,
                "data-client": session.client_id,
            }
        )
    return table(
        [
            "client",
            "member",
            "remote",
            "transport",
            "compression",
            "subjects",
            "msgs in",
            "msgs out",
            "in",
            "out",
            "queued",
            "connected",
            "latency / loss",
            "",
        ],
        rows,
        row_props=props,
        empty="no clients match",
    )


def render_slow_consumers(records: list[dict[str, Any]]) -> Component:
    """The latest slow-consumer closes (the admin API's ``/slow-consumers``, newest first)."""
    rows = [
        [
            _clock_of(r.get("at")),
            r["member"],
            r["client_id"] or html.Code(r["session"]),
            r["remote"],
            ", ".join(r["subjects"][:3])
            + (f" +{r['subject_count'] - 3}" if r["subject_count"] > 3 else ""),
            fmt.compact(r["queued_bytes"], "bytes"),
            fmt.compact(r["limit"], "bytes"),
        ]
        for r in records
    ]
    return table(
        ["closed (4001)", "member", "client", "remote", "subjects", "queued", "limit"],
        rows,
        empty="no slow consumer closed since the members started",
    )


def _clock_of(at: Any) -> str:
    """An ISO instant from the admin API as ``2026-11-22 14:05:03.120 UTC``."""
    if not at:
        return fmt.DASH
    moment = datetime.fromisoformat(str(at).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def render_detail(detail: dict[str, Any]) -> Component:
    """One client: the live-trace page's session view and its slow-consumer history."""
    history = detail.get("slow_consumers") or []
    return html.Div(
        [
            html.P(
                [
                    html.Strong(detail.get("client_id") or "(no client id)"),
                    f" · {detail['member']} · "
                    f"{'SSE' if detail.get('transport') == 'sse' else 'WebSocket'}",
                ]
            ),
            render_session(detail),
            html.H3("Slow-consumer history"),
            render_slow_consumers(history),
        ],
        **attrs({"data-client-session": detail["id"]}),
    )


def member_options(page: SessionPage, known: list[str]) -> list[dict[str, str]]:
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


def query_from_url(search: str | None) -> dict[str, Any]:
    """The page's state from the URL's query (``?q=alice&transport=sse&page=2``); unknown or
    bad values fall back to the defaults (a shared link never breaks the page)."""
    raw = parse_qs((search or "").lstrip("?"))

    def one(key: str, default: str) -> str:
        return raw.get(key, [default])[0]

    page = one("page", "0")
    sort = one("sort", DEFAULT_SORT)
    transport = one("transport", ANY)
    return {
        "q": one("q", ""),
        "member": one("member", ALL_MEMBERS) or ALL_MEMBERS,
        "transport": transport if transport in ("websocket", "sse") else ANY,
        "sort": sort if sort in SORTS else DEFAULT_SORT,
        "internal": one("internal", "") == "include",
        "page": int(page) if page.isdigit() and len(page) < 7 else 0,
        "client": one("client", "") or None,
    }


def url_from_query(query: dict[str, Any]) -> str:
    """The URL query of a state (defaults left out, so the plain page has a plain URL)."""
    pairs = {
        "q": query["q"],
        "member": "" if query["member"] == ALL_MEMBERS else query["member"],
        "transport": "" if query["transport"] == ANY else query["transport"],
        "sort": "" if query["sort"] == DEFAULT_SORT else query["sort"],
        "internal": "include" if query["internal"] else "",
        "page": str(query["page"]) if query["page"] else "",
        "client": query["client"] or "",
    }
    text = urlencode({k: v for k, v in pairs.items() if v})
    return f"?{text}" if text else ""


def api_filters(query: dict[str, Any]) -> dict[str, str]:
    """The admin API parameters beyond search and member."""
    filters = {"sort": query["sort"]}
    if query["transport"] != ANY:
        filters["transport"] = query["transport"]
    if query["internal"]:
        filters["internal"] = "true"
    return filters


def register(app: Dash, providers: Providers) -> None:
    _wire_state(app)
    _wire_listing(app, providers)
    _wire_detail(app, providers)
    _wire_actions(app, providers)


_CONTROLS = (
    Ids.SESSIONS_SEARCH,
    Ids.SESSIONS_MEMBER,
    Ids.SESSIONS_TRANSPORT,
    Ids.SESSIONS_SORT,
    Ids.SESSIONS_INTERNAL,
)
#: the query's key each input sets, and the values of a page just laid out
_KEYS = {
    Ids.SESSIONS_SEARCH: "q",
    Ids.SESSIONS_MEMBER: "member",
    Ids.SESSIONS_TRANSPORT: "transport",
    Ids.SESSIONS_SORT: "sort",
    Ids.SESSIONS_INTERNAL: "internal",
    Ids.SESSIONS_PAGE: "page",
    Ids.SESSIONS_SELECTED: "client",
}
_DEFAULTS = query_from_url("")


def _wire_state(app: Dash) -> None:
    """One callback keeps the URL, the controls and the query store in step: when the page is
    laid out (its query store still empty) the URL's query sets the controls, a shared link
    included; from then on a changed control rewrites the URL."""

    @app.callback(
        Output(Ids.URL, "search", allow_duplicate=True),
        *(Output(c, "value") for c in _CONTROLS),
        Output(Ids.SESSIONS_PAGE, "data"),
        Output(Ids.SESSIONS_SELECTED, "data"),
        Output(Ids.SESSIONS_QUERY, "data"),
        *(Input(c, "value") for c in _CONTROLS),
        Input(Ids.SESSIONS_PAGE, "data"),
        Input(Ids.SESSIONS_SELECTED, "data"),
        State(Ids.URL, "search"),
        State(Ids.SESSIONS_QUERY, "data"),
        prevent_initial_call="initial_duplicate",
    )
    def state(
        text: str | None,
        member: str | None,
        transport: str | None,
        sort: str | None,
        internal: list[str] | None,
        page: int | None,
        selected: str | None,
        search: str | None,
        current: dict[str, Any] | None,
    ) -> tuple[Any, ...]:
        trigger = ctx.triggered_id
        shown = {
            "q": text or "",
            "member": member or ALL_MEMBERS,
            "transport": transport or ANY,
            "sort": sort if sort in SORTS else DEFAULT_SORT,
            "internal": "include" in (internal or []),
            "page": 0 if trigger in _CONTROLS else max(0, page or 0),
            "client": selected,
        }
        if current is None:  # the page was just laid out: its state comes from the URL
            query = query_from_url(search)
            key = _KEYS.get(trigger)
            if key is not None and shown[key] != _DEFAULTS[key]:
                # a click before that read answered (console/url_state.py, ``answer``)
                query = {**query, key: shown[key], "page": shown["page"]}
        else:
            query = shown
        link = url_from_query(query)
        return (
            no_update if link == (search or "") else link,
            query["q"],
            query["member"],
            query["transport"],
            query["sort"],
            ["include"] if query["internal"] else [],
            query["page"],
            query["client"],
            query,
        )


def _wire_detail(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.SESSIONS_SELECTED, "data", allow_duplicate=True),
        Input({"type": Ids.SESSIONS_OPEN.value, "index": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def choose(_clicks: list[int]) -> Any:
        chosen = pending_from_trigger(ctx.triggered_id, ctx.triggered[0]["value"])
        if chosen is None:
            return no_update
        return f"{chosen['member']}|{chosen['session']}"

    @app.callback(
        Output(Ids.SESSIONS_DETAIL, "children"),
        Input(Ids.SESSIONS_SELECTED, "data"),
        Input(Ids.SESSIONS_VERSION, "data"),
        State(Ids.TOKEN, "data"),
    )
    def detail(selected: str | None, _version: int | None, token: str | None) -> Any:
        member, _, session = (selected or "").partition("|")
        if not member or not session:
            return html.P(
                "click a client to see its subscriptions, frames and slow-consumer history",
                className="muted",
            )
        provider = providers(token)
        if not isinstance(provider, OpsProvider):
            return alert(["this console has no admin API behind it"])
        try:
            return render_detail(provider.session_detail(member, session))
        except ProviderError as exc:
            if exc.status == 403:  # a viewer: the frames carry message content
                return html.P(
                    f"session {session} on {member}: its frames and history need the operator role",
                    className="muted",
                )
            return alert([exc])


def _wire_listing(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.SESSIONS_PAGE, "data", allow_duplicate=True),
        Input(Ids.SESSIONS_PREV, "n_clicks"),
        Input(Ids.SESSIONS_NEXT, "n_clicks"),
        State(Ids.SESSIONS_PAGE, "data"),
        prevent_initial_call=True,
    )
    def paging(_prev: int, _next: int, page: int | None) -> int:
        if ctx.triggered_id == Ids.SESSIONS_PREV:
            return max(0, (page or 0) - 1)
        return (page or 0) + 1  # clamped by the listing

    @app.callback(
        Output(Ids.SESSIONS_TABLE, "children"),
        Output(Ids.SESSIONS_PAGER, "children"),
        Output(Ids.SESSIONS_MEMBER, "options"),
        Output(Ids.SESSIONS_PREV, "disabled"),
        Output(Ids.SESSIONS_NEXT, "disabled"),
        Output(Ids.SESSIONS_ALERT, "children"),
        Output(Ids.SESSIONS_HIDDEN, "children"),
        Output(Ids.SESSIONS_SLOW, "children"),
        Input(Ids.SESSIONS_QUERY, "data"),
        Input(Ids.SESSIONS_REFRESH, "n_clicks"),
        Input(Ids.SESSIONS_VERSION, "data"),
        State(Ids.SESSIONS_MEMBER, "options"),
        State(Ids.TOKEN, "data"),
    )
    def listing(
        query: dict[str, Any] | None,
        _refresh: int,
        version: int | None,
        options: list[dict[str, str]] | None,
        token: str | None,
    ) -> tuple[Any, ...]:
        query = query or query_from_url("")
        provider = providers(token)
        chosen = None if query["member"] in (None, ALL_MEMBERS) else query["member"]
        page = query["page"]
        search = query["q"]
        filters = api_filters(query)
        try:
            result = provider.sessions(search, chosen, page * PAGE_SIZE, PAGE_SIZE, filters)
            if not result.items and result.total and page:  # past the end: show the last page
                last = fmt.clamp_page(page, PAGE_SIZE, result.total)
                result = provider.sessions(search, chosen, last * PAGE_SIZE, PAGE_SIZE, filters)
        except ProviderError as exc:
            return (*(no_update,) * 5, alert([exc]), no_update, no_update)
        known = [o["value"] for o in options or [] if o["value"] != ALL_MEMBERS]
        problems: list[ProviderError | str] = [
            f"member {m} could not be read: {e}" for m, e in sorted(result.errors.items())
        ]
        label = fmt.page_label(result.offset, result.limit, result.total, len(result.items))
        hidden = (
            f"{result.internal_hidden} internal probe(s) of the admin API not shown"
            if result.internal_hidden
            else ""
        )
        return (
            render_sessions(result, time.time()),
            label,
            member_options(result, known),
            result.offset == 0,
            result.offset + len(result.items) >= result.total,
            alert(problems),
            hidden,
            _slow_consumers(provider),
        )


def _slow_consumers(provider: object) -> Component:
    if not isinstance(provider, OpsProvider):
        return html.P("no slow-consumer log without an admin API", className="muted")
    try:
        page = provider.slow_consumers(SLOW_SHOWN)
    except ProviderError as exc:
        return html.Div(alert([exc]))
    return render_slow_consumers(list(page.get("items") or []))


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
