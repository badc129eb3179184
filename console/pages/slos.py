"""Objectives: service level objectives, their error budgets and burn rates (issue 33 item 6,
ADR 055).

A table of the objectives (events over the period, budget left, burn rate over 5 min, 30 min,
1 h and 6 h; red when a burn-rate alert's two windows are both over its threshold) and two
charts over the period: the budget left and the burn rate per step, with the thresholds of
``SLOFastBurn`` (14.4x) and ``SLOSlowBurn`` (6x). Data: ``GET /api/v1/slos`` and
``GET /api/v1/slos/{id}/history``. Objectives are created through the admin API
(docs/alerts.md, "Service level objectives").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Final, Protocol, runtime_checkable

from dash import Dash, Input, Output, State, dcc, html, no_update
from dash.development.base_component import Component

from .. import format as fmt
from ..components import Child, alert, attrs, card, page_header, pill, table
from ..figures import slo_figures
from ..ids import Ids
from ..polling import paced
from ..provider import ProviderError
from . import ConsolePage, Providers

PATH = "slos"
TITLE = "Objectives"
REFRESH_MS = 5000
FAST_BURN: Final = 14.4  # the built-in rules' thresholds (migration 0012)
SLOW_BURN: Final = 6.0
CHARTED: Final = 7  # objectives drawn on the charts (one color each)
WINDOWS: Final = ("5m", "30m", "1h", "6h")
GOOD_WHEN: Final = {
    "loss": "no loss",
    "recovery": "recoveries succeed",
    "subscribe": "subscribes succeed",
}


class SloIds(StrEnum):
    ALERT = "slos-alert"
    TABLE = "slos-table"
    BUDGET = "slos-budget"
    BURN = "slos-burn"
    INTERVAL = "slos-interval"


@runtime_checkable
class SloProvider(Protocol):
    def slos(self) -> dict[str, Any]: ...

    def slo_history(self, objective_id: int, points: int = 120) -> dict[str, Any]: ...


def what(objective: Mapping[str, Any]) -> str:
    """``latency <= 39.8 ms`` (the edge it is judged at), ``no loss``, ``recoveries succeed``,
    ``subscribes succeed``; ``, under /Stocks/*`` / ``, on m2`` for an objective of one watched
    pattern's deliveries / one member's clients."""
    kind = objective.get("kind")
    if kind == "latency":
        edge = objective.get("threshold_edge_ms")
        shown = fmt.latency(None if edge is None else edge / 1000)
        good = f"latency <= {shown}"
    else:
        good = GOOD_WHEN.get(str(kind), str(kind))
    member, pattern = objective.get("member"), objective.get("pattern")
    scope = (f", under {pattern}" if pattern else "") + (f", on {member}" if member else "")
    return good + scope


def budget_pill(left: float) -> Component:
    kind = "good" if left > 0.5 else "warn" if left > 0 else "bad"
    return pill(f"{100 * left:.1f} %", kind)


def burn_cell(rate: float, hot: bool) -> Component:
    return html.Span(f"{rate:.2f}x", className="slo-burning" if hot else "")


def render_table(document: Mapping[str, Any]) -> Component:
    rows: list[list[Child]] = []
    props: list[dict[str, Any]] = []
    for item in document.get("items", []):
        status = item["status"]
        rates = status.get("burn_rates", {})
        fast, slow = status.get("fast_burn", 0.0), status.get("slow_burn", 0.0)
        ratio = status.get("ratio")
        rows.append(
            [
                html.Strong(item["name"]),
                what(item),
                f"{100 * item['target']:g} % over {item['period_days']} d",
                f"{fmt.count(status['good'])} / {fmt.count(status['total'])}",
                fmt.DASH if ratio is None else f"{100 * ratio:.3f} %",
                budget_pill(status["budget_remaining"]),
                *(burn_cell(rates.get(w, 0.0), False) for w in WINDOWS),
                burn_cell(fast, fast >= FAST_BURN),
                burn_cell(slow, slow >= SLOW_BURN),
            ]
        )
        burning = "fast" if fast >= FAST_BURN else "slow" if slow >= SLOW_BURN else "no"
        props.append(attrs({"data-objective": item["name"], "data-burning": burning}))
    return table(
        [
            "objective",
            "good when",
            "target",
            "good / total",
            "ratio",
            "budget left",
            *(f"burn {w}" for w in WINDOWS),
            "fast (1h, 5m)",
            "slow (6h, 30m)",
        ],
        rows,
        class_name="slo-table",
        row_props=props,
        empty="no objective yet: POST /api/v1/slos (docs/alerts.md)",
    )


def chart_points(history: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    return [(p["at"], p["budget_remaining"], p["burn_rate"]) for p in history.get("points", [])]


def charts(provider: SloProvider, items: Sequence[Mapping[str, Any]]) -> tuple[Any, Any]:
    histories = [
        (str(item["name"]), chart_points(provider.slo_history(int(item["id"]))))
        for item in items[:CHARTED]
    ]
    return slo_figures(histories, FAST_BURN, SLOW_BURN)


def layout() -> Component:
    return html.Div(
        [
            page_header(
                TITLE,
                "Service level objectives: the share of good events over a period, the error "
                "budget left and how fast it burns (alerts SLOFastBurn and SLOSlowBurn)",
            ),
            html.Div(id=SloIds.ALERT, className="alerts"),
            card([html.H2("Where each stands"), html.Div(id=SloIds.TABLE)]),
            card(
                [
                    html.H2("Error budget left over the period"),
                    dcc.Graph(
                        id=SloIds.BUDGET, config={"displayModeBar": False, "responsive": True}
                    ),
                    html.H2("Burn rate (1 = the budget lasts the period)"),
                    dcc.Graph(id=SloIds.BURN, config={"displayModeBar": False, "responsive": True}),
                ]
            ),
            dcc.Interval(id=SloIds.INTERVAL, interval=REFRESH_MS),
        ],
        className="page page-slos",
    )


def register(app: Dash, providers: Providers) -> None:
    @app.callback(
        Output(SloIds.TABLE, "children"),
        Output(SloIds.BUDGET, "figure"),
        Output(SloIds.BURN, "figure"),
        Output(SloIds.ALERT, "children"),
        Input(SloIds.INTERVAL, "n_intervals"),
        State(Ids.TOKEN, "data"),
        running=paced(SloIds.INTERVAL),
    )
    def refresh(_n: int | None, token: str | None) -> tuple[Any, ...]:
        provider = providers(token)
        if not isinstance(provider, SloProvider):
            return [], no_update, no_update, alert(["this console has no admin API behind it"])
        try:
            document = provider.slos()
            budget, burn = charts(provider, document.get("items", []))
        except ProviderError as exc:
            return no_update, no_update, no_update, alert([exc])
        return render_table(document), budget, burn, []


PAGE = ConsolePage(PATH, TITLE, "◎", layout, group="Live")
