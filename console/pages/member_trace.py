"""The Live trace page's card "Trace a client or a subject" (issue 35 item 2, ADR 050): the
members record every frame of a client id (or every message of a subject) themselves, on one
member or the whole cluster, until Stop; the page shows the admin API's events with millisecond
times and downloads them as JSON lines (``/member-traces``, docs/admin-api.md).

Start, Stop and the poll each have a callback and a store of their own, as the subject trace
above it: Dash drops the answer of a callback still running when the same callback is triggered
again. The poll is paced by its own answers: its interval fires once (``max_intervals``) and
each answer arms the next tick. A plain 1 s interval triggered the poll again while a read of
the members (slower than a second on a loaded machine) was still running, so every answer was
dropped, and the page's trace, waiting on the poll's output, never showed the trace it had
opened (the first version of this card, issue 35: the open was audited, the page stayed empty).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import alert, card, pill, table
from ..ids import Ids, OpsIds
from ..ops_provider import OpsProvider
from ..provider import ProviderError
from . import Providers

POLL_MS: Final = 1000
KEEP: Final = 200  # events (messages) the page shows; the admin API keeps more
BY: Final = {"client": "client id", "subject": "subject"}


def merge(kept: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The last :data:`KEEP` events (or a subject trace's messages) of ``kept`` and those of
    ``new`` after them (two polls may overlap: told apart by their index in the trace)."""
    last = kept[-1]["index"] if kept else -1
    return [*kept, *(e for e in new if e["index"] > last)][-KEEP:]


def advance(
    opened: Mapping[str, Any] | None,
    view: Mapping[str, Any] | None,
    state: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """The page's trace from the trace last opened (None after Stop), the last poll's answer
    and the page's trace so far; an answer about another trace (a poll in flight when the
    operator started a new one) changes nothing."""
    if not opened:
        return None
    if not state or state["id"] != opened["id"]:
        state = {**opened, "after": -1, "events": []}
    if not view or view["id"] != state["id"]:
        return dict(state)
    return {
        **state,
        "after": max(state["after"], view["next_index"] - 1),
        "dropped": view["dropped"],
        "members": view["members"],
        "events": merge(state["events"], view["events"]),
    }


def summary(trace: Mapping[str, Any]) -> dict[str, Any]:
    """What the page keeps of an answer of ``POST /member-traces``."""
    keys = ("id", "kind", "value", "dropped", "members")
    return {key: trace[key] for key in keys}


def render_events(events: Sequence[Mapping[str, Any]]) -> Component:
    """The events newest first, each with the member's millisecond time (the API's ``at``)."""
    shown = list(reversed(events))
    rows = [
        [
            fmt.iso_millis(e["at"]),
            e["member"],
            e["direction"],
            e["client_id"] or e["session"] or fmt.DASH,
            e["subject"] or fmt.DASH,
            f"{e['size']} B",
            html.Code(e["text"][:300]),
        ]
        for e in shown
    ]
    props = [{"data-index": str(e["index"]), "data-at": e["at"]} for e in shown]
    return table(
        ["time", "member", "dir", "client", "subject", "size", "frame"],
        rows,
        row_props=props,
        empty="nothing recorded yet",
    )


def render_status(state: Mapping[str, Any] | None) -> list[Component]:
    if not state:
        return []
    followed = [m["member"] for m in state["members"] if not m.get("error")]
    parts: list[Component] = [
        pill("recording", "good"),
        html.Span(f" {BY[state['kind']]} {state['value']} on {', '.join(followed) or 'no member'}"),
        html.Span(" · trace "),
        html.Code(state["id"], className="trace-id"),  # for curl: /member-traces/{id}
    ]
    for member in state["members"]:
        if member.get("error"):
            parts.append(
                html.Span(f" · {member['member']}: {member['error']}", className="error-text")
            )
    if state.get("dropped"):
        parts.append(html.Span(f" · {state['dropped']} oldest dropped"))
    return parts


def layout() -> Component:
    return card(
        [
            html.H2("Trace a client or a subject"),
            html.P(
                "Recorded by the members themselves (no subscriber is added) until Stop; "
                "the last 200 events shown, Download gives every event kept as JSON lines.",
                className="muted",
            ),
            html.Div(
                [
                    dcc.Dropdown(
                        id=OpsIds.MTRACE_BY,
                        options=[{"label": label, "value": by} for by, label in BY.items()],
                        value="client",
                        clearable=False,
                        className="narrow-dropdown",
                    ),
                    dcc.Input(
                        id=OpsIds.MTRACE_VALUE,
                        placeholder="client id or /subject",
                        className="input wide",
                    ),
                    dcc.Input(
                        id=OpsIds.MTRACE_MEMBER,
                        placeholder="member (empty: all)",
                        className="input",
                    ),
                    html.Button("Start", id=OpsIds.MTRACE_START, className="button", n_clicks=0),
                    html.Button(
                        "Stop", id=OpsIds.MTRACE_STOP, className="button small", n_clicks=0
                    ),
                    html.Button(
                        "Download JSON lines",
                        id=OpsIds.MTRACE_DOWNLOAD,
                        className="button small",
                        n_clicks=0,
                    ),
                    html.Span(id=OpsIds.MTRACE_STATUS),
                ],
                className="trace-form",
            ),
            html.Div(id=OpsIds.MTRACE_ALERT, className="alerts"),
            html.Div(id=OpsIds.MTRACE_EVENTS, className="table-scroll"),
            dcc.Download(id=OpsIds.MTRACE_FILE),
            dcc.Store(id=OpsIds.MTRACE_OPENED, data=None),
            dcc.Store(id=OpsIds.MTRACE_VIEW, data=None),
            dcc.Store(id=OpsIds.MTRACE_STATE, data=None),
            # stopped until a Start; each poll's answer arms one more tick (see the docstring)
            dcc.Interval(id=OpsIds.MTRACE_INTERVAL, interval=POLL_MS, max_intervals=0),
        ]
    )


def ops_of(providers: Providers, token: str | None) -> OpsProvider:
    """The signed-in operator's admin API (the Live trace page's: both its traces)."""
    provider = providers(token)
    if not isinstance(provider, OpsProvider):
        raise ProviderError(0, "No admin API", "this console has no admin API behind it")
    return provider


def register(app: Dash, providers: Providers) -> None:
    _wire_clicks(app, providers)
    _wire_poll(app, providers)

    @app.callback(
        Output(OpsIds.MTRACE_EVENTS, "children"),
        Output(OpsIds.MTRACE_STATUS, "children"),
        Input(OpsIds.MTRACE_STATE, "data"),
    )
    def show(state: dict[str, Any] | None) -> tuple[Any, ...]:
        return render_events((state or {}).get("events", [])), render_status(state)


def wire_stop(
    app: Dash,
    providers: Providers,
    ids: tuple[str, str, str, str],
    close: Callable[[OpsProvider, str], object],
) -> None:
    """The Stop button of a trace card (this one and the subject trace's): close the trace the
    card opened; ``ids``: its opened store, alert, stop button and state store."""
    opened, alert_id, stop_button, state_store = ids

    @app.callback(
        Output(opened, "data", allow_duplicate=True),
        Output(alert_id, "children", allow_duplicate=True),
        Input(stop_button, "n_clicks"),
        State(state_store, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def stop(_n: int, state: dict[str, Any] | None, token: str | None) -> tuple[Any, ...]:
        if not state:
            return no_update, no_update
        try:
            close(ops_of(providers, token), state["id"])
        except ProviderError as exc:
            return no_update, alert([exc])
        return None, []


def _wire_clicks(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.MTRACE_OPENED, "data"),
        Output(OpsIds.MTRACE_ALERT, "children", allow_duplicate=True),
        Output(OpsIds.MTRACE_INTERVAL, "max_intervals", allow_duplicate=True),
        Input(OpsIds.MTRACE_START, "n_clicks"),
        State(OpsIds.MTRACE_BY, "value"),
        State(OpsIds.MTRACE_VALUE, "value"),
        State(OpsIds.MTRACE_MEMBER, "value"),
        State(OpsIds.MTRACE_STATE, "data"),
        State(OpsIds.MTRACE_INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def start(
        _n: int,
        by: str | None,
        value: str | None,
        member: str | None,
        state: dict[str, Any] | None,
        ticks: int | None,
        token: str | None,
    ) -> tuple[Any, ...]:
        try:
            ops = ops_of(providers, token)
            if state:  # one trace at a time per page: the previous one stops
                ops.close_member_trace(state["id"])
            opened = ops.open_member_trace(
                by or "client", (value or "").strip(), (member or "").strip() or None
            )
        except ProviderError as exc:
            return no_update, alert([exc]), no_update
        return summary(opened), [], (ticks or 0) + 1  # the first poll in a second

    wire_stop(
        app,
        providers,
        (OpsIds.MTRACE_OPENED, OpsIds.MTRACE_ALERT, OpsIds.MTRACE_STOP, OpsIds.MTRACE_STATE),
        lambda ops, trace: ops.close_member_trace(trace),
    )

    @app.callback(
        Output(OpsIds.MTRACE_FILE, "data"),
        Output(OpsIds.MTRACE_ALERT, "children", allow_duplicate=True),
        Input(OpsIds.MTRACE_DOWNLOAD, "n_clicks"),
        State(OpsIds.MTRACE_STATE, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def download(_n: int, state: dict[str, Any] | None, token: str | None) -> tuple[Any, ...]:
        if not state:
            return no_update, alert(["start a trace first"])
        try:
            lines = ops_of(providers, token).member_trace_jsonl(state["id"])
        except ProviderError as exc:
            return no_update, alert([exc])
        # dcc.Download's data: the file as text (what dcc.send_string builds, which is untyped)
        return {"content": lines, "filename": f"trace-{state['id']}.jsonl", "base64": False}, []


def _wire_poll(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.MTRACE_VIEW, "data"),
        Output(OpsIds.MTRACE_ALERT, "children"),
        Output(OpsIds.MTRACE_INTERVAL, "max_intervals"),
        Input(OpsIds.MTRACE_INTERVAL, "n_intervals"),
        State(OpsIds.MTRACE_STATE, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def poll(ticks: int | None, state: dict[str, Any] | None, token: str | None) -> tuple[Any, ...]:
        if not state:
            return no_update, no_update, no_update  # stopped: no next tick
        again = (ticks or 0) + 1  # this answer arms the next tick (a failed read: retried)
        try:
            view = ops_of(providers, token).read_member_trace(state["id"], state["after"])
        except ProviderError as exc:
            return no_update, alert([exc]), again
        return {**view, "id": state["id"]}, [], again

    @app.callback(
        Output(OpsIds.MTRACE_STATE, "data"),
        Input(OpsIds.MTRACE_OPENED, "data"),
        Input(OpsIds.MTRACE_VIEW, "data"),
        State(OpsIds.MTRACE_STATE, "data"),
        prevent_initial_call=True,
    )
    def combine(
        opened: dict[str, Any] | None, view: dict[str, Any] | None, state: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        return advance(opened, view, state)
