"""The Alerts page's history (issue 35 item 4): state changes filtered by rule, target, state and
range, paged as the admin API pages them (``offset``/``limit``, ``total``).

The filters and the first row live in the URL (``/console/alerts?state=resolved&range=7+d
&offset=50``) so a view can be shared and survives a reload; the card's own ``dcc.Location``
reads and writes it, as the subject browser's does.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import parse_qs, urlencode

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import alert, pill, table
from ..ids import AlertRowIds, Ids, OpsIds
from ..ops_provider import OpsProvider
from ..provider import ProviderError
from . import Providers

HISTORY_RANGES: Final[dict[str, int]] = {"1 h": 3600, "24 h": 86_400, "7 d": 7 * 86_400}
ALL_TIME: Final = "all"
HISTORY_LIMIT: Final = 50  # changes a page (the API allows 1000)
REFRESH_MS: Final = 2000
STATES: Final = ("pending", "firing", "resolved")
DEFAULT: Final[dict[str, Any]] = {
    "rule": None,
    "target": "",
    "state": None,
    "range": "24 h",
    "offset": 0,
}
_KIND = {"firing": "bad", "pending": "warn", "resolved": "good"}


def history_filters(
    rule_id: Any, target: str | None, state: str | None, range_key: str | None, now: float
) -> dict[str, Any]:
    """The history filters of the page as the API's query parameters (empty ones left out)."""
    filters: dict[str, Any] = {}
    if rule_id not in (None, ""):
        filters["rule_id"] = int(rule_id)
    if target and target.strip():
        filters["target"] = target.strip()
    if state:
        filters["state"] = state
    seconds = HISTORY_RANGES.get(range_key or ALL_TIME)
    if seconds is not None:
        filters["since"] = datetime.fromtimestamp(now - seconds, UTC).isoformat()
    return filters


def query_of(search: str | None) -> dict[str, Any]:
    """The history's query from the URL's ``?...`` (unknown or bad values: the defaults)."""
    values = {k: v[0] for k, v in parse_qs((search or "").lstrip("?")).items()}
    rule = values.get("rule", "")
    state = values.get("state")
    range_key = values.get("range", DEFAULT["range"])
    offset = values.get("offset", "0")
    return {
        "rule": int(rule) if rule.isdigit() and int(rule) > 0 else None,
        "target": values.get("target", "").strip()[:64],
        "state": state if state in STATES else None,
        "range": range_key if range_key in (*HISTORY_RANGES, ALL_TIME) else DEFAULT["range"],
        "offset": min(int(offset), 1_000_000) if offset.isdigit() else 0,
    }


def search_of(query: Mapping[str, Any]) -> str:
    """The URL's ``?...`` for a query (the defaults left out: a plain link stays plain)."""
    given = {k: query[k] for k in DEFAULT if query.get(k) not in (DEFAULT[k], None, "")}
    return f"?{urlencode(given)}" if given else ""


def pager_text(page: Mapping[str, Any]) -> str:
    total, offset, shown = int(page["total"]), int(page["offset"]), len(page["items"])
    if total == 0:
        return "no change"
    return f"{offset + 1 if shown else offset}–{offset + shown} of {total}"


def render_history(events: Sequence[Mapping[str, Any]]) -> Component:
    """State changes with how long the alert was in its previous state (a resolved one: how
    long it fired), as the API computed it."""
    rows = [
        [
            fmt.iso_time(e["at"]),
            pill(e["state"], _KIND.get(e["state"], "muted")),
            e["rule"],
            e["target"],
            fmt.duration(e.get("duration")),
            e["summary"],
        ]
        for e in events
    ]
    props = [{"data-event": str(e["id"]), "data-state": e["state"]} for e in events]
    return table(
        ["when", "state", "rule", "target", "after", "summary"],
        rows,
        row_props=props,
        empty="no alert changed state in this view",
    )


def _field(label: str, control: Component) -> Component:
    return html.Label([label, control], className="field")


def layout() -> list[Component]:
    """The history's controls, table and pager (inside the page's History card)."""
    controls = html.Div(
        [
            _field("rule", dcc.Dropdown(id=AlertRowIds.HISTORY_RULE, options=[], value=None)),
            _field(
                "target",
                dcc.Input(
                    id=AlertRowIds.HISTORY_TARGET,
                    placeholder="member or cluster",
                    debounce=0.4,
                    className="input",
                ),
            ),
            _field(
                "state",
                dcc.Dropdown(id=AlertRowIds.HISTORY_STATE, options=list(STATES), value=None),
            ),
            _field(
                "range",
                dcc.Dropdown(
                    id=AlertRowIds.HISTORY_RANGE,
                    options=[*HISTORY_RANGES, ALL_TIME],
                    value=DEFAULT["range"],
                    clearable=False,
                ),
            ),
        ],
        className="rule-form",
    )
    pager = html.Div(
        [
            html.Button("‹ Newer", id=AlertRowIds.HISTORY_PREV, className="button", n_clicks=0),
            html.Span(id=AlertRowIds.HISTORY_PAGER, className="pager-label"),
            html.Button("Older ›", id=AlertRowIds.HISTORY_NEXT, className="button", n_clicks=0),
        ],
        className="pager",
    )
    return [
        dcc.Location(id=AlertRowIds.HISTORY_URL, refresh=False),
        controls,
        html.Div(id=OpsIds.ALERTS_HISTORY),
        pager,
        dcc.Store(id=AlertRowIds.HISTORY_QUERY, data=dict(DEFAULT)),
        dcc.Store(id=AlertRowIds.HISTORY_TOTAL, data=0),
        # one tick at a time, re-armed by each answer (see register)
        dcc.Interval(id=AlertRowIds.HISTORY_INTERVAL, interval=REFRESH_MS, max_intervals=1),
    ]


def register(app: Dash, providers: Providers) -> None:
    """The history is read again 2 s after each answer: a plain 2 s interval triggered the read
    again while a slow one (a loaded machine) still ran, and Dash drops the answer of a callback
    triggered again, so the table could stay as it was for as long as the load lasted."""
    _wire_url(app)

    @app.callback(
        Output(OpsIds.ALERTS_HISTORY, "children"),
        Output(AlertRowIds.HISTORY_PAGER, "children"),
        Output(AlertRowIds.HISTORY_PREV, "disabled"),
        Output(AlertRowIds.HISTORY_NEXT, "disabled"),
        Output(AlertRowIds.HISTORY_TOTAL, "data"),
        Output(AlertRowIds.HISTORY_INTERVAL, "max_intervals"),
        Input(AlertRowIds.HISTORY_QUERY, "data"),
        Input(AlertRowIds.HISTORY_INTERVAL, "n_intervals"),
        Input(OpsIds.ALERT_ACTION_RESULT, "children"),
        State(Ids.TOKEN, "data"),
    )
    def history(
        query: dict[str, Any], ticks: int | None, _a: Any, token: str | None
    ) -> tuple[Any, ...]:
        again = (ticks or 0) + 1  # this answer arms the next read
        provider = providers(token)
        if not isinstance(provider, OpsProvider):
            return no_update, "", True, True, no_update, no_update  # the page's alert says why
        filters = history_filters(
            query["rule"], query["target"], query["state"], query["range"], time.time()
        )
        try:
            page = provider.alert_history(HISTORY_LIMIT, filters, query["offset"])
        except ProviderError as exc:
            return alert([exc]), "", True, True, no_update, again
        last = page["offset"] + len(page["items"]) >= page["total"]
        return (
            render_history(page["items"]),
            pager_text(page),
            page["offset"] == 0,
            last,
            page["total"],
            again,
        )


def _wire_url(app: Dash) -> None:
    filters = (
        AlertRowIds.HISTORY_RULE,
        AlertRowIds.HISTORY_TARGET,
        AlertRowIds.HISTORY_STATE,
        AlertRowIds.HISTORY_RANGE,
    )
    keys = ("rule", "target", "state", "range")

    @app.callback(
        Output(AlertRowIds.HISTORY_QUERY, "data"),
        *(Output(f, "value") for f in filters),
        Input(AlertRowIds.HISTORY_URL, "search"),
        *(State(f, "value") for f in filters),
    )
    def from_url(search: str | None, *shown: Any) -> tuple[Any, ...]:
        query = query_of(search)
        wanted = [query[k] for k in keys]
        return query, *(
            w if (s or None) != (w or None) else no_update
            for s, w in zip(shown, wanted, strict=True)
        )

    @app.callback(
        Output(AlertRowIds.HISTORY_URL, "search"),
        *(Input(f, "value") for f in filters),
        Input(AlertRowIds.HISTORY_PREV, "n_clicks"),
        Input(AlertRowIds.HISTORY_NEXT, "n_clicks"),
        State(AlertRowIds.HISTORY_URL, "search"),
        State(AlertRowIds.HISTORY_TOTAL, "data"),
        prevent_initial_call=True,
    )
    def to_url(*values: Any) -> Any:
        *chosen, _p, _n, search, total = values
        query = query_of(search)
        if ctx.triggered_id == AlertRowIds.HISTORY_PREV:
            query["offset"] = max(0, query["offset"] - HISTORY_LIMIT)
        elif ctx.triggered_id == AlertRowIds.HISTORY_NEXT:
            query["offset"] = min(query["offset"] + HISTORY_LIMIT, max(0, (total or 0) - 1))
        else:
            wanted = query_of(search_of({**dict(zip(keys, chosen, strict=True)), "offset": 0}))
            if all(query[k] == wanted[k] for k in keys):
                return no_update  # the URL already says it (the fields were set from it)
            query = wanted  # a new filter starts at the newest change
        new = search_of(query)
        return new if new != (search or "") else no_update
