"""Delivery > Accounting: what became of every due delivery (issue 33 item 4, ADR 054).

One row per subject (the most deliveries due), per watched pattern and for the cluster: counts
since start (and the last second under each), and whether ``due = written + conflated +
dropped + closed + covered`` holds; when it does not, the difference (in flight on a busy
system; a bug when it stays on a quiet one). Data: ``GET /api/v1/delivery/accounting``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from dash import html
from dash.development.base_component import Component

from pushgrid.ops.accounting import COLUMNS

from .. import format as fmt
from ..components import Child, attrs, table

#: the columns the table shows, in order (the ops contract's, as the admin API returns them)
SHOWN = COLUMNS


@runtime_checkable
class AccountingProvider(Protocol):
    def accounting(self) -> dict[str, Any]: ...

    def slow_consumer_offenders(self) -> dict[str, Any]: ...


def holds_cell(row: Mapping[str, Any]) -> Component:
    """``adds up`` or ``off by N`` (N = due minus the outcomes)."""
    missing = int(row.get("unaccounted", 0))
    if missing == 0:
        return html.Span("adds up", className="acct-ok", **attrs({"data-holds": True}))
    return html.Span(
        f"off by {fmt.count(missing)}",
        className="acct-off",
        **attrs({"data-holds": False, "data-unaccounted": missing}),
    )


def count_cell(row: Mapping[str, Any], column: str) -> Component:
    """The count since start, the last second under it."""
    total = row.get("total", {}).get(column)
    second = row.get("per_second", {}).get(column)
    return html.Span(
        [fmt.count(total), html.Small(f"{fmt.count(second)}/s", className="acct-rate")],
        className="acct-count",
        **attrs({"data-column": column, "data-value": total}),
    )


def render_rows(kind: str, rows: Sequence[Mapping[str, Any]], empty: str) -> Component:
    body: list[list[Child]] = [
        [
            html.Strong(row.get("name") or "all subjects"),
            *(count_cell(row, column) for column in SHOWN),
            holds_cell(row),
        ]
        for row in rows
    ]
    props = [{"data-row": row.get("name", "")} for row in rows]
    header: list[Child] = [kind, *SHOWN, "due = outcomes?"]
    return table(header, body, class_name="acct-table", row_props=props, empty=empty)


def render_accounting(document: Mapping[str, Any]) -> Component:
    """The cluster's totals, the watched patterns, then the top subjects."""
    totals = document.get("totals")
    unreachable = [m["member"] for m in document.get("members", []) if not m.get("reachable")]
    parts: list[Child] = [
        render_rows("cluster", [totals] if totals else [], "no member read"),
        html.H3("Watched patterns"),
        render_rows("pattern", document.get("patterns", []), "no pattern watched"),
        html.H3("Subjects (most deliveries due)"),
        render_rows("subject", document.get("subjects", []), "no delivery yet"),
    ]
    if unreachable:
        parts.insert(0, html.P(f"not read: {', '.join(unreachable)}", className="acct-off"))
    return html.Div(parts, className="acct")


def render_offenders(document: Mapping[str, Any]) -> Component:
    """The cluster's slow consumers grouped by client, most closes first (ADR 054)."""
    rows: list[list[Child]] = [
        [
            html.Strong(item["client"]),
            fmt.count(item["closes"]),
            ", ".join(item["members"]),
            item["last_remote"],
            ", ".join(item["subjects"][:5]) + (" ..." if len(item["subjects"]) > 5 else ""),
            fmt.compact(item["max_queued_bytes"], "bytes"),
            "deflate" if item.get("compressed") else "off",
            fmt.latency(None if item.get("last_rtt_ms") is None else item["last_rtt_ms"] / 1000),
            str(item["last_at"])[:19].replace("T", " "),
        ]
        for item in document.get("items", [])
    ]
    props = [{"data-client": item["client"]} for item in document.get("items", [])]
    header: list[Child] = [
        "client",
        "closes",
        "members",
        "last address",
        "subjects",
        "most queued",
        "compression",
        "round trip",
        "last closed (UTC)",
    ]
    return table(
        header, rows, class_name="offenders-table", row_props=props, empty="no slow consumer"
    )
