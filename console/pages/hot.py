"""Hot subjects: the top subjects of the cluster or of one member, with sparklines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import (
    CLUSTER_SCOPE,
    Child,
    alert,
    card,
    page_header,
    scope_dropdown,
    scope_options,
    table,
    unreachable_members,
)
from ..ids import Ids, OpsIds
from ..ops_provider import OpsProvider
from ..polling import paced
from ..provider import ProviderError
from . import ConsolePage, Providers

PATH = "hot"
TITLE = "Hot subjects"
REFRESH_MS = 2000
CLUSTER = CLUSTER_SCOPE
RANKINGS: Final = {
    "messages_in": "Incoming messages/s",
    "messages_out": "Outgoing messages/s",
    "bytes_out": "Outgoing bytes/s",
    "subscribers": "Subscribers",
}
BARS: Final = "▁▂▃▄▅▆▇█"
SPARK_POINTS: Final = 30  # the last 30 seconds (the member keeps 60)


def sparkline(values: Sequence[float]) -> str:
    """A text sparkline (one block character per value, scaled to the series' maximum)."""
    if not values:
        return ""
    top = max(values)
    if top <= 0:
        return BARS[0] * len(values)
    return "".join(BARS[min(7, int(v / top * 7 + 0.5))] for v in values)


# How each ranking's values read (console.format.number: one formatter on every page).
KINDS: Final[dict[str, fmt.NumberKind]] = {
    "messages_in": "rate",
    "messages_out": "rate",
    "bytes_out": "bytes",
    "subscribers": "count",
}


def spark_label(rankings: Mapping[str, Any]) -> str:
    """The sparkline column's heading: the seconds the sparklines really show (one point a
    second, at most :data:`SPARK_POINTS`)."""
    shown = max(
        (
            min(SPARK_POINTS, len(entry.get("history") or []))
            for entries in rankings.values()
            for entry in entries
        ),
        default=SPARK_POINTS,
    )
    return f"last {shown} s"


def rankings_of(document: Mapping[str, Any], scope: str) -> Mapping[str, Any]:
    """The rankings of ``scope`` (the cluster or a member) in a ``/hot-subjects`` answer."""
    if scope == CLUSTER:
        return dict(document.get("cluster", {}).get("rankings", {}))
    for member in document.get("members", []):
        if member.get("member") == scope:
            return dict(member.get("rankings", {}))
    return {}


def render_hot(rankings: Mapping[str, Any]) -> list[Component]:
    cards: list[Component] = []
    spark = spark_label(rankings)
    for name, title in RANKINGS.items():
        how = KINDS[name]
        rows: list[list[Child]] = []
        props = []
        for rank, entry in enumerate(rankings.get(name, []), start=1):
            error = entry.get("error", 0)
            rows.append(
                [
                    str(rank),
                    html.Code(entry["subject"]),
                    fmt.number(entry["value"], how),
                    f"± {fmt.number(error, how)}" if error else "exact",
                    html.Span(
                        sparkline(entry.get("history", [])[-SPARK_POINTS:]), className="sparkline"
                    ),
                ]
            )
            props.append({"data-subject": entry["subject"], "data-ranking": name})
        cards.append(
            card(
                [
                    html.H2(title),
                    table(
                        ["#", "subject", "value", "error", spark],
                        rows,
                        row_props=props,
                        empty="no traffic yet",
                    ),
                ],
                class_name="hot-card",
                id=f"hot-{name}",
            )
        )
    return cards


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Top subjects by rate (space-saving sketch: value ± error bound) and subscribers",
                scope_dropdown(OpsIds.HOT_SCOPE),
            ),
            html.Div(id=OpsIds.HOT_ALERT, className="alerts"),
            html.Div(id=OpsIds.HOT_TABLES, className="hot-grid"),
            dcc.Interval(id=OpsIds.HOT_INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-hot",
    )


def register(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(OpsIds.HOT_TABLES, "children"),
        Output(OpsIds.HOT_SCOPE, "options"),
        Output(OpsIds.HOT_ALERT, "children"),
        Input(OpsIds.HOT_INTERVAL, "n_intervals"),
        Input(OpsIds.HOT_SCOPE, "value"),
        State(Ids.TOKEN, "data"),
        running=paced(OpsIds.HOT_INTERVAL),
    )
    def refresh(_n: int | None, scope: str | None, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        if not isinstance(provider, OpsProvider):
            return [], no_update, alert(["this console has no admin API behind it"])
        try:
            document = provider.hot_subjects()
        except ProviderError as exc:
            return no_update, no_update, alert([exc])
        rankings = rankings_of(document, scope or CLUSTER)
        return render_hot(rankings), scope_options(document), unreachable_members(document)


PAGE = ConsolePage(PATH, TITLE, "▲", layout, group="Traffic")
