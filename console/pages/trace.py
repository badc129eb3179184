"""Live trace: watch a subject's messages arrive (pause, bounded buffer), and look at a
session (subscriptions, outbound buffer, last frames). Everything goes through the admin API,
which subscribes on the member as a client (docs/alerts.md, "Live trace")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import Child, alert, card, page_header, pill, table
from ..ids import Ids, OpsIds
from ..polling import paced
from ..provider import ProviderError
from . import ConsolePage, Providers, member_trace
from .member_trace import merge, ops_of, wire_stop

PATH = "trace"
TITLE = "Live trace"
POLL_MS = 1000
_STATUS = {"live": "good", "connecting": "warn", "denied": "bad", "failed": "bad"}


def render_messages(messages: Sequence[Mapping[str, Any]]) -> Component:
    rows = [
        [
            fmt.iso_time(m["received_at"]),
            m["kind"],
            str(m["seq"]),
            f"{m['size']} B",
            html.Code(m["content"][:200]),
            ", ".join(f"{k}={v}" for k, v in m["fields"].items())[:200],
        ]
        for m in reversed(messages)
    ]
    props = [{"data-seq": str(m["seq"])} for m in reversed(messages)]
    return table(
        ["time", "kind", "seq", "size", "content", "fields"],
        rows,
        row_props=props,
        empty="no message yet: publish one on the subject",
    )


def _clock(millis: int | None) -> str:
    """Unix milliseconds as ``14:05:03.120 UTC``."""
    if not millis:
        return fmt.DASH
    moment = datetime.fromtimestamp(millis / 1000, UTC)
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def render_session(detail: Mapping[str, Any]) -> Component:
    frames: list[list[Child]] = [
        [
            _clock(f.get("at")),
            f"{f['size']} B",
            # null: a subject the operator's entitlement does not grant (issue 22)
            html.Code((f["text"] or "(hidden: entitlement)")[:300]),
        ]
        for f in reversed(detail.get("last_frames", []))
    ]
    return html.Div(
        [
            html.P(
                [
                    html.Strong(detail["id"]),
                    f" from {detail['remote']} · ",
                    f"outbound buffer {detail['outbound_buffer_bytes']} B · ",
                    f"{detail['bytes_out']} B out",
                ]
            ),
            html.P(["subscriptions: ", *[html.Code(s + " ") for s in detail["subjects"]]]),
            table(
                ["sent", "size", "frame"],
                frames,
                empty="no frame yet (recording started now: show it again later)",
            ),
        ],
        className="session-detail",
    )


def layout() -> Component:
    return html.Div(
        [
            page_header(TITLE, "Messages of one subject as they arrive on a member"),
            html.Div(id=OpsIds.TRACE_ALERT, className="alerts"),
            card(
                html.Div(
                    [
                        dcc.Input(id=OpsIds.TRACE_MEMBER, placeholder="member", className="input"),
                        dcc.Input(
                            id=OpsIds.TRACE_SUBJECT,
                            placeholder="/subject/to/trace",
                            className="input wide",
                        ),
                        dcc.Input(
                            id=OpsIds.TRACE_TOKEN,
                            placeholder="entitlement token (JWT)",
                            type="password",
                            className="input",
                        ),
                        html.Button("Trace", id=OpsIds.TRACE_START, className="button", n_clicks=0),
                        html.Button(
                            "Pause", id=OpsIds.TRACE_PAUSE, className="button small", n_clicks=0
                        ),
                        html.Button(
                            "Stop", id=OpsIds.TRACE_STOP, className="button small", n_clicks=0
                        ),
                        html.Span(id=OpsIds.TRACE_STATUS),
                    ],
                    className="trace-form",
                )
            ),
            card(html.Div(id=OpsIds.TRACE_MESSAGES, className="table-scroll"), class_name="flush"),
            member_trace.layout(),
            card(
                [
                    html.H2("Session"),
                    html.Div(
                        [
                            dcc.Input(
                                id=OpsIds.TRACE_SESSION, placeholder="session id", className="input"
                            ),
                            html.Button(
                                "Show",
                                id=OpsIds.TRACE_SESSION_SHOW,
                                className="button small",
                                n_clicks=0,
                            ),
                        ],
                        className="session-form",
                    ),
                    html.Div(id=OpsIds.TRACE_SESSION_VIEW),
                ]
            ),
            dcc.Store(id=OpsIds.TRACE_OPENED, data=None),
            dcc.Store(id=OpsIds.TRACE_VIEW, data=None),
            dcc.Store(id=OpsIds.TRACE_STATE, data=None),
            dcc.Store(id=OpsIds.TRACE_PAUSED, data=False),
            dcc.Interval(id=OpsIds.TRACE_INTERVAL, interval=POLL_MS),
        ],
        className="page page-trace",
    )


def advance(
    opened: Mapping[str, Any] | None,
    view: Mapping[str, Any] | None,
    state: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """The page's trace from the last trace opened (``None`` or no id after Stop), the last
    poll's view of a trace and the page's trace so far. A view of another trace than the open
    one (a poll still in flight when the operator clicked) changes nothing."""
    if not opened or not opened.get("id"):
        return None
    if not state or state["id"] != opened["id"]:
        state = {**opened, "after": -1, "dropped": 0, "messages": []}
    if not view or view["id"] != state["id"]:
        return dict(state)
    return {
        **state,
        "after": max(state["after"], view["next_index"] - 1),
        "status": view["status"],
        "error": view.get("error"),
        "dropped": view["dropped"],
        "messages": merge(state["messages"], view["messages"]),
    }


def register(app: Dash, providers: Providers) -> None:
    # Dash drops the result of a callback still running when the same callback is triggered
    # again: the Trace and Stop clicks therefore have callbacks of their own, never superseded
    # by the 1 s poll (a slow open used to lose its trace), and `combine` builds the page's
    # trace from the latest of each.
    _wire_clicks(app, providers)
    _wire_poll(app, providers)
    member_trace.register(app, providers)
    _wire_view(app, providers)


def _wire_clicks(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.TRACE_OPENED, "data"),
        Output(OpsIds.TRACE_ALERT, "children", allow_duplicate=True),
        Input(OpsIds.TRACE_START, "n_clicks"),
        State(OpsIds.TRACE_MEMBER, "value"),
        State(OpsIds.TRACE_SUBJECT, "value"),
        State(OpsIds.TRACE_TOKEN, "value"),
        State(OpsIds.TRACE_STATE, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def start(
        _n: int,
        member: str | None,
        subject: str | None,
        jwt: str | None,
        state: dict[str, Any] | None,
        token: str | None,
    ) -> tuple[Any, ...]:
        try:
            ops = ops_of(providers, token)
            if state:
                ops.close_trace(state["id"])
            opened = ops.open_trace((member or "").strip(), (subject or "").strip(), jwt)
        except ProviderError as exc:
            return no_update, alert([exc])
        return {"id": opened["id"], "status": opened["status"], "error": opened.get("error")}, []

    wire_stop(
        app,
        providers,
        (OpsIds.TRACE_OPENED, OpsIds.TRACE_ALERT, OpsIds.TRACE_STOP, OpsIds.TRACE_STATE),
        lambda ops, trace: ops.close_trace(trace),
    )


def _wire_poll(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.TRACE_VIEW, "data"),
        Output(OpsIds.TRACE_ALERT, "children"),
        Input(OpsIds.TRACE_INTERVAL, "n_intervals"),
        State(OpsIds.TRACE_PAUSED, "data"),
        State(OpsIds.TRACE_STATE, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
        running=paced(OpsIds.TRACE_INTERVAL),
    )
    def poll(
        _n: int | None, paused: bool | None, state: dict[str, Any] | None, token: str | None
    ) -> tuple[Any, ...]:
        if not state or paused:
            return no_update, no_update
        try:
            view = ops_of(providers, token).read_trace(state["id"], state["after"])
        except ProviderError as exc:
            return no_update, alert([exc])
        return {**view, "id": state["id"]}, []

    @app.callback(
        Output(OpsIds.TRACE_STATE, "data"),
        Input(OpsIds.TRACE_OPENED, "data"),
        Input(OpsIds.TRACE_VIEW, "data"),
        State(OpsIds.TRACE_STATE, "data"),
        prevent_initial_call=True,
    )
    def combine(
        opened: dict[str, Any] | None, view: dict[str, Any] | None, state: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        return advance(opened, view, state)

    # Pausing has a store and a callback of its own: a poll in flight when the operator clicks
    # cannot undo the click.
    @app.callback(
        Output(OpsIds.TRACE_PAUSED, "data"),
        Input(OpsIds.TRACE_PAUSE, "n_clicks"),
        Input(OpsIds.TRACE_START, "n_clicks"),
        State(OpsIds.TRACE_PAUSED, "data"),
        prevent_initial_call=True,
    )
    def pause(_pause: int, _start: int, paused: bool | None) -> bool:
        return False if ctx.triggered_id == OpsIds.TRACE_START else not paused


def _wire_view(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.TRACE_MESSAGES, "children"),
        Output(OpsIds.TRACE_STATUS, "children"),
        Output(OpsIds.TRACE_PAUSE, "children"),
        Input(OpsIds.TRACE_STATE, "data"),
        Input(OpsIds.TRACE_PAUSED, "data"),
    )
    def show(state: dict[str, Any] | None, paused: bool | None) -> tuple[Any, ...]:
        label = "Resume" if paused else "Pause"
        if not state:
            return render_messages([]), "", label
        status = "paused" if paused else state["status"]
        shown = [pill(status, _STATUS.get(status, "muted"))]
        if state.get("error"):
            shown.append(html.Span(f" {state['error']}", className="error-text"))
        return render_messages(state["messages"]), shown, label

    @app.callback(
        Output(OpsIds.TRACE_SESSION_VIEW, "children"),
        Input(OpsIds.TRACE_SESSION_SHOW, "n_clicks"),
        State(OpsIds.TRACE_MEMBER, "value"),
        State(OpsIds.TRACE_SESSION, "value"),
        State(Ids.TOKEN, "data"),
        State(OpsIds.TRACE_TOKEN, "value"),
        prevent_initial_call=True,
    )
    def session(
        _n: int,
        member: str | None,
        session_id: str | None,
        token: str | None,
        entitlement: str | None,
    ) -> Any:
        try:
            detail = ops_of(providers, token).session_detail(
                (member or "").strip(),
                (session_id or "").strip(),
                (entitlement or "").strip() or None,
            )
        except ProviderError as exc:
            return alert([exc])
        return render_session(detail)


PAGE = ConsolePage(PATH, TITLE, "⌁", layout, group="Live", role="operator")
