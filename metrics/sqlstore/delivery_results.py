"""The delivery latency windows (ADR 062): write a run's ``delivery_stats``, read the latest.

A run's frame (``spark_stats.delivery.DELIVERY_COLUMNS``) replaces the rows of its as-of like the
other window statistics (results.py): upserted by (scope, series, window, as_of), and rows of that
as-of that this run did not produce are deleted. Nothing here imports pandas at module level.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Table, delete, or_
from sqlalchemy.orm import Session

from ..window_spec import WINDOW_NAMES
from .latest import latest_rows
from .models import DeliveryWindowStat, from_unix
from .upsert import upsert

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DELIVERY_KEY", "delivery_rows", "delivery_window_stats", "write_delivery"]

DELIVERY_KEY: Final = ("scope", "series", "window", "as_of")
#: the clients' loss kinds, columns of the table (migration 0016); the leaf library may not
#: import the protocol: tests/unit/test_store_results.py keeps it equal to its LOSS_KINDS
LOSS_KINDS: Final = ("gaps", "duplicates", "resyncs", "recovered", "recovery_failed")
_VALUES: Final = (
    "count",
    "p50",
    "p90",
    "p99",
    "p999",
    "buckets",
    *LOSS_KINDS,
    "run_id",
    "computed_at",
)
_PERCENTILES: Final = ("p50", "p90", "p99", "p999")


def _seconds(value: Any) -> float | None:
    """A percentile as stored: None for none (NaN from pandas), ``inf`` kept (above 100 s)."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def delivery_rows(frame: pd.DataFrame, run_id: int, computed_at: datetime) -> list[dict[str, Any]]:
    """The rows to insert, one per (scope, series, window, as_of) (the last row wins)."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in frame.to_dict("records"):
        row = {
            "scope": str(record["scope"]),
            "series": str(record["series"]),
            "window": str(record["window"]),
            "as_of": from_unix(int(record["as_of"])),
            "count": int(record["count"]),
            **{name: _seconds(record[name]) for name in _PERCENTILES},
            "buckets": str(record["buckets"]),
            **{kind: int(record.get(kind, 0)) for kind in LOSS_KINDS},
            "run_id": run_id,
            "computed_at": computed_at,
        }
        rows[tuple(row[k] for k in DELIVERY_KEY)] = row
    return list(rows.values())


def write_delivery(db: Session, run_id: int, result: Any, computed_at: datetime, size: int) -> int:
    """Store ``result.delivery_stats`` (if the run has one) inside the caller's transaction."""
    frame = getattr(result, "delivery_stats", None)
    if frame is None:
        return 0
    rows = delivery_rows(frame, run_id, computed_at)
    table = DeliveryWindowStat.__table__
    assert isinstance(table, Table)
    upsert(db, table, rows, size, DELIVERY_KEY, _VALUES)
    as_ofs = sorted({row["as_of"] for row in rows} | {from_unix(result.as_of)})
    db.execute(
        delete(DeliveryWindowStat)
        .where(DeliveryWindowStat.as_of.in_(as_ofs))
        .where(or_(DeliveryWindowStat.run_id.is_(None), DeliveryWindowStat.run_id != run_id))
    )
    return len(rows)


def delivery_window_stats(
    db: Session, scope: str | None = None, series: str | None = None
) -> list[DeliveryWindowStat]:
    """The latest as-of of every (scope, series, window), optionally filtered; cluster first,
    then nodes, each series in order and windows in their documented order."""
    table = DeliveryWindowStat
    filters = []
    if scope is not None:
        filters.append(table.scope == scope)
    if series is not None:
        filters.append(table.series == series)
    rows = latest_rows(db, table, ("scope", "series", "window"), filters)
    order = {name: position for position, name in enumerate(WINDOW_NAMES)}
    return sorted(
        rows,
        key=lambda r: (r.scope != "cluster", r.scope, r.series, order.get(r.window, 99)),
    )
