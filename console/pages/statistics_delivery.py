"""Statistics > Delivery latency windows (issue 33 items 1 and 7, ADR 062).

Under the indicators' table, for the same scope: per delivery series (``member``: the clients'
end-to-end latency, ``leg:<leg>``: the server's own legs, ``pattern:<pattern>``: a watched
pattern) the latencies counted and p50 / p90 / p99 / p99.9 over the twelve windows, as the
statistics pipeline read them from each window's merged buckets, and the loss the clients
reported in each window (gaps, duplicates, resyncs, recoveries). Data: ``GET
/api/v1/stats/delivery`` (decoded with its own type, ``pushgrid.ops.api.delivery_windows``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from dash import html
from dash.development.base_component import Component

from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops.api.delivery_windows import DeliveryWindowList, DeliveryWindowOut
from pushgrid.ops.delivery import LOSS_KINDS

from .. import format as fmt
from ..components import attrs

#: a window's lines, as the API names them, and their headings
LINES: tuple[tuple[str, str], ...] = (
    ("count", "latencies"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("loss", "loss"),
)


class DeliveryStatsIds:
    DATA = "stats-delivery-data"  # dcc.Store: the whole answer, every scope
    TABLE = "stats-delivery-table"


@runtime_checkable
class DeliveryWindowsProvider(Protocol):
    def delivery_windows(self) -> DeliveryWindowList: ...


def _cell(window: DeliveryWindowOut | None, line: str, series: str, name: str) -> Component:
    value: Any = None if window is None else getattr(window, line)
    if line == "loss":
        text = fmt.DASH if window is None else loss_text(window.loss)
    elif line == "count":
        text = fmt.count(value)
    elif window is not None and window.count and value is None:
        text = "> 100 s"  # above the last bucket's bound
    else:
        text = fmt.latency(value)
    data = {"data-series": series, "data-window": name, "data-line": line}
    data["data-value"] = "" if value is None else repr(value)
    return html.Td(text, className="num", **attrs(data))


def loss_text(loss: dict[str, int]) -> str:
    """The clients' loss reports of a window in a few words ("none", "3 gaps, 1 resyncs")."""
    seen = [f"{fmt.count(loss[k])} {k.replace('_', ' ')}" for k in LOSS_KINDS if loss.get(k)]
    return ", ".join(seen) if seen else "none"


def render_delivery_windows(answer: DeliveryWindowList | None, scope: str | None) -> Component:
    """Series down the side (five lines each), windows across; nothing stored, a note."""
    items = [i for i in (answer.items if answer else []) if i.scope == scope]
    if not items:
        return html.Div(
            "no delivery latency windows for this scope (clients report latencies, then the "
            "statistics pipeline runs)",
            className="empty",
        )
    series_names = list(dict.fromkeys(i.series for i in items))
    by_key = {(i.series, i.window): i for i in items}
    head = html.Thead(
        html.Tr(
            [html.Th("series"), html.Th("")]
            + [html.Th(w, className="num", **attrs({"data-window": w})) for w in WINDOW_NAMES]
        )
    )
    body: list[Component] = []
    for position, series in enumerate(series_names):
        for n, (line, heading) in enumerate(LINES):
            cells: list[Component] = []
            if n == 0:
                cells.append(html.Td(series, rowSpan=len(LINES), className="indicator-name"))
            cells.append(html.Td(heading, className="stat-name"))
            cells += [_cell(by_key.get((series, w)), line, series, w) for w in WINDOW_NAMES]
            band = f"band-{position % 2}" + (" band-start" if n == 0 else "")
            body.append(html.Tr(cells, className=band))
    as_of = max(i.as_of for i in items)
    return html.Div(
        [
            html.H3("Delivery latency", className="card-title"),
            html.Div(
                f"from merged latency buckets, as of {fmt.iso_time(as_of.isoformat())}",
                className="muted small",
            ),
            html.Table(
                [head, html.Tbody(body)],
                className="stats-table delivery-windows",
                **attrs({"data-scope": scope or ""}),
            ),
        ]
    )
