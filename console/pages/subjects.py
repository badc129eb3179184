"""Subjects: look up a subject's snapshot, subscribers and presence, publish a test message,
watch it."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from pushgrid.ops.api.subjects import PresenceOut, PublishOut

from .. import format as fmt
from ..components import alert, attrs, card, page_header, pill, table
from ..ids import Ids
from ..polling import paced
from ..provider import ProviderError, SubjectView
from . import OPERATOR_ONLY, ConsolePage, Providers

PATH = "subjects"
TITLE = "Subjects"
WATCH_MS = 1000
LOG_LENGTH = 20
PRESENCE_MS = 3000  # presence changes slowly: read it less often than the snapshot


def layout() -> Component:
    return html.Div(
        [
            page_header(TITLE, "Snapshot, subscribers, presence, test publish of a subject"),
            html.Div(id=Ids.SUBJECT_ALERT, className="alerts"),
            html.Div(
                [
                    dcc.Input(
                        id=Ids.SUBJECT_INPUT,
                        type="text",
                        placeholder="/Stocks/NYSE/IBM",
                        debounce=False,
                        className="input grow",
                        n_submit=0,
                    ),
                    dcc.Input(
                        id=Ids.SUBJECT_ENTITLEMENT,
                        type="password",
                        placeholder="entitlement token (members with entitlement)",
                        debounce=False,
                        className="input",
                    ),
                    html.Button(
                        "Look up", id=Ids.SUBJECT_LOOKUP, className="button primary", n_clicks=0
                    ),
                ],
                className="controls",
            ),
            html.Div(
                [
                    card(
                        [
                            html.Div("Snapshot", className="card-title"),
                            html.Div(
                                html.Span("look up a subject", className="muted"),
                                id=Ids.SUBJECT_SNAPSHOT,
                            ),
                        ],
                        class_name="span-2",
                    ),
                    card(
                        [
                            html.Div("Subscribers", className="card-title"),
                            html.Div(id=Ids.SUBJECT_SUBSCRIBERS),
                        ]
                    ),
                ],
                className="grid-3",
            ),
            html.Div(
                [
                    card(
                        [
                            html.Div("Publish a test message", className="card-title"),
                            html.Label("content", className="control-label"),
                            dcc.Input(
                                id=Ids.SUBJECT_CONTENT,
                                type="text",
                                placeholder="193",
                                className="input",
                                debounce=False,
                            ),
                            html.Label("fields (key=value, one a line)", className="control-label"),
                            dcc.Textarea(
                                id=Ids.SUBJECT_FIELDS, placeholder="volume=6.62M", className="input"
                            ),
                            html.Button(
                                "Publish",
                                id=Ids.SUBJECT_PUBLISH,
                                className="button primary",
                                n_clicks=0,
                            ),
                            html.Div(id=Ids.SUBJECT_ARRIVAL, className="arrival"),
                        ],
                        class_name=OPERATOR_ONLY,  # publishing needs the operator role
                    ),
                    card(
                        [
                            html.Div("Changes seen while watching", className="card-title"),
                            html.Div(id=Ids.SUBJECT_LOG_VIEW),
                        ],
                        class_name="span-2",
                    ),
                ],
                className="grid-3",
            ),
            card(
                [
                    html.Div("Presence: who follows it", className="card-title"),
                    html.Div(
                        html.Span("look up a subject", className="muted"),
                        id=Ids.SUBJECT_PRESENCE,
                    ),
                ]
            ),
            dcc.Store(id=Ids.SUBJECT_CURRENT, data=None),
            dcc.Store(id=Ids.SUBJECT_PUBLISHED, data=None),
            dcc.Store(id=Ids.SUBJECT_LOG, data=[]),
            dcc.Interval(id=Ids.SUBJECT_INTERVAL, interval=WATCH_MS, disabled=True),
            dcc.Interval(id=Ids.SUBJECT_PRESENCE_INTERVAL, interval=PRESENCE_MS),
        ],
        className="page page-subjects",
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def render_snapshot(info: SubjectView) -> Component:
    snap = info.snapshot
    if snap is None:
        return html.Div(
            [html.Strong(info.subject), html.Span(" has no snapshot (nothing retained yet)")],
            className="muted",
            **attrs({"data-seq": ""}),
        )
    fields = table(
        ["field", "value"],
        [[k, v] for k, v in sorted(snap.fields.items())],
        class_name="compact",
        empty="no fields",
    )
    return html.Div(
        [
            html.Div(snap.subject, className="subject-name"),
            html.Div(snap.content, className="snapshot-content"),
            html.Div(
                [
                    html.Span(f"seq {snap.seq}", className="chip"),
                    html.Span(f"epoch {snap.epoch}", className="chip"),
                    html.Span(fmt.timestamp(snap.ts / 1000), className="chip"),
                ],
                className="chips",
            ),
            fields,
        ],
        **attrs({"data-seq": str(snap.seq), "data-content": snap.content}),
    )


def render_subscribers(info: SubjectView) -> Component:
    rows = [[member, str(n)] for member, n in sorted(info.subscribers.items())]
    rows += [[member, f"error: {error}"] for member, error in sorted(info.errors.items())]
    return html.Div(
        [
            html.Div(
                str(info.subscriber_count),
                className="big",
                **attrs({"data-count": str(info.subscriber_count)}),
            ),
            html.Div("across the cluster", className="muted small"),
            table(["member", "subscribers"], rows, class_name="compact", empty="no members"),
        ]
    )


def render_presence(info: PresenceOut) -> Component:
    """The presence list (docs/occupancy.md): client id, member, session; or why there is none."""
    if not info.enabled:
        return html.Div(
            f"{info.subject} keeps no presence (Occupancy.PresencePatterns); "
            f"{info.subscribers} subscribers in the cluster",
            className="muted",
            **attrs({"data-enabled": "false"}),
        )
    rows = [[c.client_id or "(none)", c.member, c.session] for c in info.clients]
    note = f"{len(info.clients)} listed of {info.subscribers} subscribers (as {info.member} knows)"
    if info.truncated:
        note += ": the list is shorter than the count (Occupancy.PresenceMax per member)"
    return html.Div(
        [
            html.Div(note, className="muted small"),
            table(["client id", "member", "session"], rows, class_name="compact", empty="nobody"),
        ],
        **attrs({"data-enabled": "true", "data-listed": str(len(info.clients))}),
    )


def presence_problem(exc: ProviderError) -> Component:
    """A refused presence read, shown in the card (a viewer may see counts, not client ids)."""
    if exc.status == 403 and "role" in f"{exc.title} {exc.detail}".lower():
        text = "presence lists client ids: the operator role is needed"
        return html.Span(text, className="muted")
    return html.Span(f"{exc.title}: {exc.detail}", className="muted")


def next_log(
    log: Sequence[Mapping[str, Any]], info: SubjectView, now: float
) -> list[dict[str, Any]]:
    """Append the snapshot to the change log when its (epoch, seq) is new."""
    out = [dict(entry) for entry in log if entry.get("subject") == info.subject]
    snap = info.snapshot
    if snap is None:
        return out
    if out and out[-1]["epoch"] == snap.epoch and out[-1]["seq"] == snap.seq:
        return out
    out.append(
        {
            "subject": info.subject,
            "seen": now,
            "epoch": snap.epoch,
            "seq": snap.seq,
            "content": snap.content,
        }
    )
    return out[-LOG_LENGTH:]


def render_log(log: Sequence[Mapping[str, Any]]) -> Component:
    rows = [[fmt.timestamp(e["seen"]), str(e["seq"]), e["content"]] for e in reversed(log)]
    return table(["seen", "seq", "content"], rows, class_name="compact", empty="no changes yet")


def arrival(
    published: Mapping[str, Any] | None, info: SubjectView, now: float
) -> tuple[Component, dict[str, Any] | None]:
    """Whether the last test message reached the subject's snapshot, and how fast; with the
    published record to keep, holding the moment it was first seen in ``arrived``: the time it
    took is frozen from then on (it kept growing with every refresh, issue 34)."""
    if not published or published.get("subject") != info.subject:
        return html.Span(), None
    seq, epoch = published.get("seq"), published.get("epoch")
    snap = info.snapshot
    if snap is not None and seq is not None and snap.epoch == epoch and snap.seq >= seq:
        record = dict(published)
        record.setdefault("arrived", now)
        took = max(0.0, float(record["arrived"]) - float(record["sent"]))
        text = f" seq {seq} is in the snapshot (arrived in {fmt.duration(took)})"
        shown = html.Div(
            [pill("ARRIVED", "good"), html.Span(text)],
            **attrs({"data-arrived": "true", "data-took": f"{took:.6f}"}),
        )
        return shown, (record if "arrived" not in published else None)
    waiting = html.Div(
        [pill("WAITING", "info"), html.Span(f" published seq {seq}, watching the snapshot…")],
        **attrs({"data-arrived": "false"}),
    )
    return waiting, None


def published_record(result: PublishOut, now: float) -> dict[str, Any]:
    record = result.model_dump(mode="json")
    record["sent"] = now
    return record


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    _register_presence(app, providers)

    @app.callback(
        Output(Ids.SUBJECT_CURRENT, "data"),
        Output(Ids.SUBJECT_LOG, "data", allow_duplicate=True),
        Output(Ids.SUBJECT_INTERVAL, "disabled"),
        Output(Ids.SUBJECT_ALERT, "children", allow_duplicate=True),
        Input(Ids.SUBJECT_LOOKUP, "n_clicks"),
        Input(Ids.SUBJECT_INPUT, "n_submit"),
        State(Ids.SUBJECT_INPUT, "value"),
        prevent_initial_call=True,
    )
    def look_up(_clicks: int, _submits: int, subject: str | None) -> tuple[Any, ...]:
        subject = (subject or "").strip()
        if not subject:
            return no_update, no_update, no_update, alert(["enter a subject, e.g. /Stocks/IBM"])
        return subject, [], False, []

    @app.callback(
        Output(Ids.SUBJECT_SNAPSHOT, "children"),
        Output(Ids.SUBJECT_SUBSCRIBERS, "children"),
        Output(Ids.SUBJECT_LOG, "data"),
        Output(Ids.SUBJECT_LOG_VIEW, "children"),
        Output(Ids.SUBJECT_ARRIVAL, "children"),
        Output(Ids.SUBJECT_ALERT, "children"),
        Output(Ids.SUBJECT_PUBLISHED, "data", allow_duplicate=True),
        Input(Ids.SUBJECT_CURRENT, "data"),
        Input(Ids.SUBJECT_INTERVAL, "n_intervals"),
        State(Ids.SUBJECT_LOG, "data"),
        State(Ids.SUBJECT_PUBLISHED, "data"),
        State(Ids.TOKEN, "data"),
        State(Ids.SUBJECT_ENTITLEMENT, "value"),
        prevent_initial_call="initial_duplicate",
        running=paced(Ids.SUBJECT_INTERVAL),
    )
    def watch(
        subject: str | None,
        _n: int | None,
        log: list[dict[str, Any]] | None,
        published: dict[str, Any] | None,
        token: str | None,
        entitlement: str | None,
    ) -> tuple[Any, ...]:
        if not subject:
            return (no_update,) * 7
        provider = providers(token)
        try:
            info = provider.subject(subject, (entitlement or "").strip() or None)
        except ProviderError as exc:
            return (*(no_update,) * 5, alert([exc]), no_update)
        now = time.time()
        new_log = next_log(log or [], info, now)
        problems = [f"member {m}: {e}" for m, e in sorted(info.errors.items())]
        shown, arrived = arrival(published, info, now)
        return (
            render_snapshot(info),
            render_subscribers(info),
            new_log,
            render_log(new_log),
            shown,
            alert(problems),
            no_update if arrived is None else arrived,
        )

    @app.callback(
        Output(Ids.SUBJECT_PUBLISHED, "data"),
        Output(Ids.SUBJECT_CURRENT, "data", allow_duplicate=True),
        Output(Ids.SUBJECT_INTERVAL, "disabled", allow_duplicate=True),
        Output(Ids.SUBJECT_ARRIVAL, "children", allow_duplicate=True),
        Output(Ids.SUBJECT_ALERT, "children", allow_duplicate=True),
        Input(Ids.SUBJECT_PUBLISH, "n_clicks"),
        State(Ids.SUBJECT_INPUT, "value"),
        State(Ids.SUBJECT_CONTENT, "value"),
        State(Ids.SUBJECT_FIELDS, "value"),
        State(Ids.SUBJECT_CURRENT, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def publish(
        _clicks: int,
        typed: str | None,
        content: str | None,
        fields_text: str | None,
        current: str | None,
        token: str | None,
    ) -> tuple[Any, ...]:
        subject = (typed or "").strip() or current
        if not subject:
            return no_update, no_update, no_update, no_update, alert(["enter a subject first"])
        try:
            fields = fmt.parse_fields(fields_text)
        except ValueError as exc:
            return no_update, no_update, no_update, no_update, alert([f"fields: {exc}"])
        provider = providers(token)
        try:
            result = provider.publish(subject, content or "", fields)
        except ProviderError as exc:
            return no_update, no_update, no_update, no_update, alert([exc])
        record = published_record(result, time.time())
        waiting = html.Div(
            [pill("SENT", "info"), html.Span(f" seq {result.seq}, watching the snapshot…")],
            **attrs({"data-arrived": "false"}),
        )
        return record, subject, False, waiting, []


def _register_presence(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(Ids.SUBJECT_PRESENCE, "children"),
        Input(Ids.SUBJECT_CURRENT, "data"),
        Input(Ids.SUBJECT_PRESENCE_INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        State(Ids.SUBJECT_ENTITLEMENT, "value"),
        running=paced(Ids.SUBJECT_PRESENCE_INTERVAL),
    )
    def presence(
        subject: str | None, _n: int | None, token: str | None, entitlement: str | None
    ) -> Any:
        if not subject:
            return no_update
        try:
            info = providers(token).presence(subject, (entitlement or "").strip() or None)
        except ProviderError as exc:
            return presence_problem(exc)
        return render_presence(info)


PAGE = ConsolePage(PATH, TITLE, "◈", layout, group="Live")
