"""Delivery > Latency and loss (issue 33 items 1, 2 and 7; ADR 048).

What the subscribers measured over the members' last window (60 s): the count and the
percentiles of end-to-end latency, and the loss counters the clients reported, for the cluster
(every reachable member's buckets added), each member and each watched pattern; then where the
time goes, the server's own legs per member. The members keep only their window, so the page
draws the percentiles it has read since it was opened (at most :data:`KEEP` points); the whole
history is in Prometheus' cumulative histograms and the per-second archive. Data:
``GET /api/v1/delivery/latency``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from dash import html
from dash.development.base_component import Component

from pushgrid.ops.delivery import LEGS, LOSS_KINDS

from .. import format as fmt
from ..components import Child, attrs, table

#: the percentiles shown, as the admin API names them
PERCENTILES: tuple[str, ...] = ("p50", "p90", "p99", "p999")
HEADINGS = {"p50": "p50", "p90": "p90", "p99": "p99", "p999": "p99.9"}
#: points the page keeps of its own reads (2 s apart: 30 minutes)
KEEP = 900


@runtime_checkable
class LatencyProvider(Protocol):
    def delivery_latency(self) -> dict[str, Any]: ...


def _scopes(document: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any] | None, str]]:
    """``(row key, label, summary-or-None, error)`` for the cluster, members and patterns."""
    cluster = document.get("cluster") or {}
    merged = fmt.plural(int(cluster.get("members", 0)), "member")
    out: list[tuple[str, str, Mapping[str, Any] | None, str]] = [
        ("cluster", f"cluster ({merged})", cluster, "")
    ]
    for member in document.get("members", []):
        name = member["member"]
        if member.get("reachable"):
            out.append((f"member:{name}", name, member, ""))
        else:
            out.append((f"member:{name}", name, None, member.get("error") or "not readable"))
    for pattern in cluster.get("patterns", []):
        out.append((f"pattern:{pattern['pattern']}", pattern["pattern"], pattern, ""))
    return out


def _number(column: str, value: float | None, text: str) -> Component:
    """A cell with the admin API's own number in ``data-value`` ("" for none; tests compare
    it)."""
    shown = "" if value is None else value
    return html.Span(text, **attrs({"data-column": column, "data-value": shown}))


def render_latency(document: Mapping[str, Any]) -> Component:
    """One row per scope: latencies counted, the percentiles and the loss counters."""
    rows: list[list[Child]] = []
    props: list[dict[str, Any]] = []
    for key, label, summary, error in _scopes(document):
        props.append({"data-row": key})
        if summary is None:
            rows.append([label, error, *([fmt.DASH] * (len(PERCENTILES) + len(LOSS_KINDS)))])
            continue
        latency = summary.get("latency") or {}
        loss = summary.get("loss") or {}
        count = latency.get("count")
        row: list[Child] = [label, _number("count", count, fmt.count(count))]
        row += [_number(p, latency.get(p), fmt.latency(latency.get(p))) for p in PERCENTILES]
        row += [_number(k, loss.get(k, 0), fmt.count(loss.get(k, 0))) for k in LOSS_KINDS]
        rows.append(row)
    header: list[Child] = ["scope", "latencies", *(HEADINGS[p] for p in PERCENTILES)]
    header += [kind.replace("_", " ") for kind in LOSS_KINDS]
    return table(header, rows, class_name="latency-table", row_props=props)


def render_legs(document: Mapping[str, Any]) -> Component:
    """Per member, p50 / p99 of the server's own legs (publish to acknowledgement, engine to
    this member, the hub's fan-out)."""
    rows: list[list[Child]] = []
    props: list[dict[str, Any]] = []
    for member in document.get("members", []):
        if not member.get("reachable"):
            continue
        legs = member.get("legs") or {}
        row: list[Child] = [member["member"]]
        for leg in LEGS:
            summary = legs.get(leg) or {}
            p50, p99 = summary.get("p50"), summary.get("p99")
            row.append(
                _number(leg, p99, f"{fmt.latency(p50)} / {fmt.latency(p99)}")
                if summary.get("count")
                else fmt.DASH
            )
        rows.append(row)
        props.append({"data-row": f"member:{member['member']}"})
    header: list[Child] = ["member", *(f"{leg.replace('_', ' ')} p50 / p99" for leg in LEGS)]
    return table(
        header, rows, class_name="legs-table", row_props=props, empty="no member could be read"
    )


def extend_history(
    history: Sequence[Mapping[str, Any]] | None, document: Mapping[str, Any], at: float
) -> list[dict[str, Any]]:
    """The page's points with this read's p50 / p99 per scope added (pure; the last
    :data:`KEEP`). A scope without latencies in the window has no point (a gap, not a zero)."""
    point: dict[str, Any] = {"t": at}
    for key, _label, summary, _error in _scopes(document):
        latency = (summary or {}).get("latency") or {}
        if latency.get("count"):
            point[key] = [latency.get("p50"), latency.get("p99")]
    kept = [dict(p) for p in (history or [])[-(KEEP - 1) :]]
    return [*kept, point]
