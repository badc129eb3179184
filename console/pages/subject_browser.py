"""Subject browser: list and search the cluster's subjects (the entitlement rules' pattern syntax),
a subject's cached history, remove its retained snapshot, end one client's subscription (ADR 051).

The query (pattern, sort, first row) lives in the URL (``?pattern=/Stocks/*&sort=-subscribers
&offset=25``) so a view can be shared; the page's own ``dcc.Location`` reads and writes it.
Every number shown is the admin API's, unchanged (subscribers, snapshot bytes, seq).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import parse_qs, urlencode

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import alert, attrs, card, notice, page_header, table
from ..ids import Ids, SubjectBrowserIds
from ..provider import ProviderError
from ..subject_provider import SubjectBrowserProvider
from . import OPERATOR_ONLY, ConsolePage, Providers

PATH = "browse"
TITLE = "Subject browser"
PAGE_SIZE: Final = 25
HISTORY: Final = 20  # the last messages shown (the API allows up to 100)
SESSIONS: Final = 50  # the subscribed sessions listed for the unsubscribe buttons
SORTS: Final = {
    "subject": "subject A-Z",
    "-subscribers": "most subscribers",
    "-snapshot_bytes": "largest snapshot",
    "-last_publish": "latest publish",
    "last_publish": "oldest publish",
}
DEFAULT: Final = {"pattern": "*", "sort": "subject", "offset": 0}
NO_PROVIDER: Final = "this console has no admin API behind it"
I = SubjectBrowserIds  # noqa: E741 - short, read on every line of the layout


def layout() -> Component:
    return html.Div(
        [
            dcc.Location(id=I.URL, refresh=False),
            page_header(
                TITLE,
                "Every member's subjects: search with the entitlement rules' patterns",
                html.Button("Refresh", id=I.REFRESH, className="button", n_clicks=0),
            ),
            html.Div(id=I.ALERT, className="alerts"),
            html.Div(id=I.RESULT, className="alerts"),
            html.Div(
                [
                    dcc.Input(
                        id=I.PATTERN,
                        type="search",
                        placeholder="/Stocks/* (a last * is any depth; * alone: everything)",
                        debounce=0.4,
                        className="input grow",
                    ),
                    dcc.Dropdown(
                        id=I.SORT,
                        options=[{"label": v, "value": k} for k, v in SORTS.items()],
                        value="subject",
                        clearable=False,
                        className="member-select",
                    ),
                ],
                className="controls",
            ),
            card(html.Div(id=I.TABLE, className="table-scroll"), class_name="flush"),
            html.Div(
                [
                    html.Button("‹ Previous", id=I.PREV, className="button", n_clicks=0),
                    html.Span(id=I.PAGER, className="pager-label"),
                    html.Button("Next ›", id=I.NEXT, className="button", n_clicks=0),
                ],
                className="pager",
            ),
            card(
                [
                    html.Div(
                        [
                            html.Div("Subject", className="card-title"),
                            dcc.Input(
                                id=I.TOKEN,
                                type="password",
                                placeholder="entitlement token (members with entitlement)",
                                className="input",
                            ),
                            html.Button(
                                "Remove snapshot",
                                id=I.REMOVE,
                                className=f"button danger {OPERATOR_ONLY}",
                                n_clicks=0,
                                disabled=True,
                            ),
                        ],
                        className="controls",
                    ),
                    html.Div(html.Span("choose a subject", className="muted"), id=I.DETAIL),
                ]
            ),
            dcc.Store(id=I.QUERY, data=dict(DEFAULT)),
            dcc.Store(id=I.SELECTED, data=None),
            dcc.Store(id=I.VERSION, data=0),
            dcc.Store(id=I.TOTAL, data=0),
            dcc.ConfirmDialog(id=I.CONFIRM, message=""),
        ],
        className="page page-browse",
    )


# --- plain functions (unit-tested) ----------------------------------------------------------


def query_of(search: str | None) -> dict[str, Any]:
    """The page's query from the URL's ``?...`` (unknown or bad values: the defaults)."""
    values = parse_qs((search or "").lstrip("?"))
    pattern = (values.get("pattern") or ["*"])[0].strip() or "*"
    sort = (values.get("sort") or ["subject"])[0]
    try:
        offset = max(0, int((values.get("offset") or ["0"])[0]))
    except ValueError:
        offset = 0
    return {
        "pattern": pattern,
        "sort": sort if sort in SORTS else DEFAULT["sort"],
        "offset": offset,
    }


def search_of(query: Mapping[str, Any]) -> str:
    """The URL's ``?...`` for a query (the defaults left out: a plain link stays plain)."""
    given = {k: query[k] for k in ("pattern", "sort", "offset") if query.get(k) != DEFAULT[k]}
    return f"?{urlencode(given)}" if given else ""


def render_subjects(page: Mapping[str, Any]) -> Component:
    rows: list[list[Any]] = []
    props: list[dict[str, Any]] = []
    for item in page.get("items", []):
        subject = item["subject"]
        rows.append(
            [
                html.Button(
                    subject,
                    id={"type": I.ROW.value, "index": subject},
                    className="link-button",
                    n_clicks=0,
                ),
                str(item["subscribers"]),
                str(item["snapshot_bytes"]) if item["snapshot_bytes"] else "none",
                fmt.iso_time(item.get("last_publish")),
                ", ".join(item.get("members", [])),
            ]
        )
        props.append(
            attrs(
                {
                    "data-subject": subject,
                    "data-subscribers": item["subscribers"],
                    "data-snapshot-bytes": item["snapshot_bytes"],
                }
            )
        )
    return table(
        ["subject", "subscribers", "snapshot bytes", "last publish", "members"],
        rows,
        row_props=props,
        empty="no subject matches",
    )


def pager_text(page: Mapping[str, Any]) -> str:
    total, offset, shown = int(page["total"]), int(page["offset"]), len(page["items"])
    if total == 0:
        return "no subjects"
    text = f"{offset + 1 if shown else offset}–{offset + shown} of {total}"
    return text + (" (a member listed only its first 10,000)" if page.get("truncated") else "")


def render_detail(
    subject: str, history: Mapping[str, Any], sessions: Mapping[str, Any] | None
) -> Component:
    rows = [
        [str(m["seq"]), m["epoch"], fmt.iso_time(m["ts"]), m["qos"], m["content"]]
        for m in reversed(history.get("items", []))
    ]
    parts: list[Any] = [
        html.Div(subject, className="subject-name", **attrs({"data-subject": subject})),
        html.Div(
            f"last {len(rows)} cached messages on {history['member']} (newest first)",
            className="muted small",
        ),
        table(
            ["seq", "epoch", "time", "qos", "content"],
            rows,
            class_name="compact",
            row_props=[attrs({"data-seq": m["seq"]}) for m in reversed(history.get("items", []))],
            empty="nothing cached (standard messages never are)",
        ),
    ]
    if sessions is not None:
        parts.append(html.Div(render_sessions(sessions), className=OPERATOR_ONLY))
    return html.Div(parts)


def render_sessions(sessions: Mapping[str, Any]) -> Component:
    rows = [
        [
            html.Code(s["id"]),
            s["member"],
            s["remote"],
            html.Button(
                "Unsubscribe",
                id={"type": I.UNSUBSCRIBE.value, "index": f"{s['member']}|{s['id']}"},
                className="button danger small",
                n_clicks=0,
            ),
        ]
        for s in sessions.get("items", [])
    ]
    props = [attrs({"data-session": s["id"]}) for s in sessions.get("items", [])]
    return html.Div(
        [
            html.Div("Subscribed sessions", className="card-title"),
            table(["session", "member", "remote", ""], rows, row_props=props, empty="none"),
        ]
    )


# --- callbacks ------------------------------------------------------------------------------


def register(app: Dash, providers: Providers) -> None:
    _wire_url(app)
    _wire_listing(app, providers)
    _wire_detail(app, providers)
    _wire_actions(app, providers)


def _wire_url(app: Dash) -> None:
    @app.callback(
        Output(I.QUERY, "data"),
        Output(I.PATTERN, "value"),
        Output(I.SORT, "value"),
        Input(I.URL, "search"),
        State(I.PATTERN, "value"),
        State(I.SORT, "value"),
    )
    def from_url(search: str | None, pattern: str | None, sort: str | None) -> tuple[Any, ...]:
        query = query_of(search)
        shown = "" if query["pattern"] == "*" else query["pattern"]
        return (
            query,
            shown if (pattern or "") != shown else no_update,
            query["sort"] if sort != query["sort"] else no_update,
        )

    @app.callback(
        Output(I.URL, "search"),
        Input(I.PATTERN, "value"),
        Input(I.SORT, "value"),
        Input(I.PREV, "n_clicks"),
        Input(I.NEXT, "n_clicks"),
        State(I.URL, "search"),
        State(I.TOTAL, "data"),
        prevent_initial_call=True,
    )
    def to_url(
        pattern: str | None, sort: str | None, _p: int, _n: int, search: str | None, total: int
    ) -> Any:
        query = query_of(search)
        if ctx.triggered_id == I.PREV:
            query["offset"] = max(0, query["offset"] - PAGE_SIZE)
        elif ctx.triggered_id == I.NEXT:
            query["offset"] = min(query["offset"] + PAGE_SIZE, max(0, (total or 0) - 1))
        else:
            wanted = {"pattern": (pattern or "").strip() or "*", "sort": sort or "subject"}
            if all(query[k] == v for k, v in wanted.items()):
                return no_update  # the URL already says it (set from the URL)
            query = {**wanted, "offset": 0}  # a new search starts at the first row
        new = search_of(query)
        return new if new != (search or "") else no_update


def _wire_listing(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(I.TABLE, "children"),
        Output(I.PAGER, "children"),
        Output(I.PREV, "disabled"),
        Output(I.NEXT, "disabled"),
        Output(I.TOTAL, "data"),
        Output(I.ALERT, "children"),
        Input(I.QUERY, "data"),
        Input(I.REFRESH, "n_clicks"),
        Input(I.VERSION, "data"),
        State(Ids.TOKEN, "data"),
    )
    def listing(query: dict[str, Any], _r: int, _v: int, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        if not isinstance(provider, SubjectBrowserProvider):
            return [], "", True, True, 0, alert([NO_PROVIDER])
        try:
            page = provider.subject_page(
                query["pattern"], query["sort"], query["offset"], PAGE_SIZE
            )
        except ProviderError as exc:
            return no_update, no_update, no_update, no_update, no_update, alert([exc])
        problems: list[ProviderError | str] = [
            f"member {u['member']} could not be read: {u['error']}"
            for u in page.get("unreachable", [])
        ]
        last = page["offset"] + len(page["items"]) >= page["total"]
        return (
            render_subjects(page),
            pager_text(page),
            page["offset"] == 0,
            last,
            page["total"],
            alert(problems),
        )


def _wire_detail(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(I.SELECTED, "data"),
        Input({"type": I.ROW.value, "index": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    def choose(_clicks: list[int]) -> Any:
        if not isinstance(ctx.triggered_id, dict) or not ctx.triggered[0]["value"]:
            return no_update  # a row drawn again, not clicked
        return str(ctx.triggered_id["index"])

    @app.callback(
        Output(I.DETAIL, "children"),
        Output(I.REMOVE, "disabled"),
        Input(I.SELECTED, "data"),
        Input(I.VERSION, "data"),
        State(I.TOKEN, "value"),
        State(Ids.TOKEN, "data"),
        State(Ids.OPERATOR, "data"),
        prevent_initial_call=True,
    )
    def detail(
        subject: str | None,
        _v: int,
        entitlement: str | None,
        token: str | None,
        operator: dict[str, Any] | None,
    ) -> tuple[Any, ...]:
        provider = providers(token)
        if not subject or not isinstance(provider, SubjectBrowserProvider):
            return no_update, True
        operating = (operator or {}).get("role") in ("operator", "admin")
        try:
            page = provider.subject_page(subject, "subject", 0, 1)
            members = page["items"][0]["members"] if page["items"] else []
            if not members:
                return notice(f"{subject} is no longer held by any member", "warn"), True
            history = provider.subject_history(members[0], subject, HISTORY, entitlement)
            sessions = provider.subject_sessions(subject, SESSIONS) if operating else None
        except ProviderError as exc:
            return alert([exc]), False
        return render_detail(subject, history, sessions), False


def _wire_actions(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(I.CONFIRM, "displayed"),
        Output(I.CONFIRM, "message"),
        Input(I.REMOVE, "n_clicks"),
        State(I.SELECTED, "data"),
        prevent_initial_call=True,
    )
    def ask(clicks: int, subject: str | None) -> tuple[Any, ...]:
        if not clicks or not subject:
            return no_update, no_update
        message = (
            f"Remove the retained snapshot of {subject} on every member?\n\n"
            "Epoch and seq stay; new subscribers get no snapshot until the next retained message."
        )
        return True, message

    @app.callback(
        Output(I.VERSION, "data"),
        Output(I.RESULT, "children"),
        Input(I.CONFIRM, "submit_n_clicks"),
        Input({"type": I.UNSUBSCRIBE.value, "index": ALL}, "n_clicks"),
        State(I.SELECTED, "data"),
        State(I.TOKEN, "value"),
        State(I.VERSION, "data"),
        State(Ids.TOKEN, "data"),
        prevent_initial_call=True,
    )
    def act(
        _s: int,
        _u: list[int],
        subject: str | None,
        entitlement: str | None,
        version: int,
        token: str | None,
    ) -> tuple[Any, ...]:
        provider = providers(token)
        if not subject or not ctx.triggered[0]["value"]:
            return no_update, no_update  # an Unsubscribe button drawn again, not clicked
        if not isinstance(provider, SubjectBrowserProvider):
            return no_update, alert([NO_PROVIDER])
        try:
            if isinstance(ctx.triggered_id, dict):
                member, _, session = str(ctx.triggered_id["index"]).partition("|")
                provider.unsubscribe(member, session, subject, entitlement or None)
                shown = notice(
                    f"session {session} on {member} unsubscribed from {subject}", "success"
                )
            else:
                shown = removed_notice(provider.remove_snapshot(subject, entitlement or None))
        except ProviderError as exc:
            return (version or 0) + 1, alert([exc])
        return (version or 0) + 1, shown


def removed_notice(done: Mapping[str, Any]) -> list[Component]:
    if not done["removed"]:
        return notice(f"{done['subject']} had no snapshot", "warn")
    where = ", ".join(f"{m['member']} (seq {m['seq']})" for m in done["members"])
    text = (
        f"snapshot of {done['subject']} removed on every member: {where}; epoch and seq unchanged"
    )
    if done.get("unreachable"):
        missed = ", ".join(u["member"] for u in done["unreachable"])
        return notice(f"{text}; not reached: {missed}", "warn")
    return notice(text, "success")


PAGE = ConsolePage(PATH, TITLE, "☷", layout, group="Traffic")
