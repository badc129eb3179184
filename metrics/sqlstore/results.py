"""The statistics tables: write a run's results, read the latest window statistics and trends.

Writers take an SQL session and are one :func:`~.engine.transaction` each; readers only read.
Nothing here imports pandas at module level (frames arrive from the pipeline already built).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from sqlalchemy import Table, delete, or_, select
from sqlalchemy.orm import Session

from .delivery_results import write_delivery
from .engine import transaction
from .latest import latest_rows
from .models import TrendPoint, WatchedWindowStat, WindowStat, from_unix, utc_now
from .runs import get_run
from .upsert import STAT_KEY, upsert

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "StatResult",
    "WrittenRows",
    "trend",
    "watched_window_stats",
    "window_stats",
    "write_results",
]

BATCH_SIZE: Final = 1000
_upsert = upsert  # one name the writers call (a test makes one of its calls fail)
_FRAME_COLUMNS: Final = ("scope", "indicator", "window", "as_of", "count", "max", "avg", "stddev")


class StatResult(Protocol):
    """What :func:`write_results` stores (``spark_stats.results.PipelineResult`` has this shape):
    frames with the columns of ``spark_stats.results.STAT_COLUMNS``; an optional
    ``watched_stats`` frame (``pattern`` + those columns) goes to ``watched_window_stats``, an
    optional ``delivery_stats`` frame (``spark_stats.delivery.DELIVERY_COLUMNS``) to
    ``delivery_window_stats`` (delivery_results.py)."""

    @property
    def as_of(self) -> int: ...
    @property
    def window_stats(self) -> pd.DataFrame: ...
    @property
    def trend_points(self) -> pd.DataFrame: ...


@dataclass(frozen=True)
class WrittenRows:
    window_stats: int
    trend_points: int
    watched_stats: int = 0
    delivery_stats: int = 0

    @property
    def total(self) -> int:
        return self.window_stats + self.trend_points + self.watched_stats + self.delivery_stats


def _optional_float(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):  # pandas.NA and friends
        return None
    return None if math.isnan(number) else number


def _frame_rows(
    frame: pd.DataFrame, name: str, run_id: int, computed_at: datetime, keys: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Rows of ``frame`` (``keys`` text columns, then ``_FRAME_COLUMNS``) to insert."""
    columns = [*keys, *_FRAME_COLUMNS]
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing columns {', '.join(missing)}")
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}  # by key: a repeated key keeps its last row
    moments: dict[int, datetime] = {}
    for full in frame.loc[:, columns].itertuples(index=False, name=None):
        extra = {k: str(v) for k, v in zip(keys, full, strict=False)}
        record = full[len(keys) :]
        scope, indicator, window, as_of, count, max_, avg, stddev = record
        try:
            seconds = int(as_of)
            moment = moments.get(seconds)
            if moment is None:
                moment = moments[seconds] = from_unix(seconds)
            row = {
                **extra,
                "scope": str(scope),
                "indicator": str(indicator),
                "window": str(window),
                "as_of": moment,
                "count": int(count),
                "max": _optional_float(max_),
                "avg": _optional_float(avg),
                "stddev": _optional_float(stddev),
                "run_id": run_id,
                "computed_at": computed_at,
            }
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"{name}: bad row {record!r}: {exc}") from None
        rows[(*extra.values(), row["scope"], row["indicator"], row["window"], seconds)] = row
    return list(rows.values())


def write_results(
    db: Session,
    run_id: int,
    result: StatResult,
    *,
    batch_size: int = BATCH_SIZE,
) -> WrittenRows:
    """Upsert a run's window statistics and trend points in one transaction.

    Rows are keyed by (scope, indicator, window, as_of): a rerun for the same as-of replaces
    values (and ``run_id``, ``computed_at``) instead of adding rows. Window statistics at the
    result's as-of instants that this run did not produce are deleted, so after a rerun the
    as-of holds exactly the new result. Trend points outside the result are kept (a series
    grows run after run).
    """
    computed_at = utc_now()
    stats_rows = _frame_rows(result.window_stats, "window_stats", run_id, computed_at)
    trend_rows = _frame_rows(result.trend_points, "trend_points", run_id, computed_at)
    stats_table = WindowStat.__table__
    trend_table = TrendPoint.__table__
    assert isinstance(stats_table, Table)
    assert isinstance(trend_table, Table)
    with transaction(db):
        get_run(db, run_id)  # a clear error (and no orphan rows) for an unknown run
        _upsert(db, stats_table, stats_rows, batch_size)
        as_ofs = sorted({row["as_of"] for row in stats_rows} | {from_unix(result.as_of)})
        db.execute(
            delete(WindowStat)
            .where(WindowStat.as_of.in_(as_ofs))
            .where(or_(WindowStat.run_id.is_(None), WindowStat.run_id != run_id))
        )
        _upsert(db, trend_table, trend_rows, batch_size)
        watched = _write_watched(db, run_id, result, computed_at, batch_size)
        delivery = write_delivery(db, run_id, result, computed_at, batch_size)
    return WrittenRows(len(stats_rows), len(trend_rows), watched, delivery)


def _write_watched(
    db: Session, run_id: int, result: StatResult, computed_at: datetime, batch_size: int
) -> int:
    """The watched patterns' window statistics (ADR 030), replaced per as-of like
    ``window_stats``: a pattern no longer watched keeps its older rows, never a new one."""
    frame = getattr(result, "watched_stats", None)
    if frame is None:
        return 0
    rows = _frame_rows(frame, "watched_stats", run_id, computed_at, ("pattern",))
    table = WatchedWindowStat.__table__
    assert isinstance(table, Table)
    _upsert(db, table, rows, batch_size, ("pattern", *STAT_KEY))
    as_ofs = sorted({row["as_of"] for row in rows} | {from_unix(result.as_of)})
    db.execute(
        delete(WatchedWindowStat)
        .where(WatchedWindowStat.as_of.in_(as_ofs))
        .where(or_(WatchedWindowStat.run_id.is_(None), WatchedWindowStat.run_id != run_id))
    )
    return len(rows)


# --- readers (for the CLI and the admin API) --------------------------------------------------


def _order(names: Sequence[str]) -> dict[str, int]:
    return {name: position for position, name in enumerate(names)}


def _sort_key(row: WindowStat | TrendPoint | WatchedWindowStat) -> tuple[Any, ...]:
    from ..indicators import INDICATOR_NAMES
    from ..window_spec import WINDOW_NAMES

    indicators, windows = _order(INDICATOR_NAMES), _order(WINDOW_NAMES)
    return (
        row.scope != "cluster",
        row.scope,
        indicators.get(row.indicator, len(indicators)),
        row.indicator,
        windows.get(row.window, len(windows)),
        row.window,
        row.as_of,
    )


def _moment(value: datetime | int | float) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: give a timezone-aware (UTC) value")
        return value
    return from_unix(value)


def window_stats(
    db: Session,
    scope: str | None = None,
    indicator: str | None = None,
    window: str | None = None,
) -> list[WindowStat]:
    """The latest as-of of every (scope, indicator, window), optionally filtered.

    Sorted cluster first, then nodes; indicators and windows in their documented order.
    """
    filters = []
    if scope is not None:
        filters.append(WindowStat.scope == scope)
    if indicator is not None:
        filters.append(WindowStat.indicator == indicator)
    if window is not None:
        filters.append(WindowStat.window == window)
    rows = latest_rows(db, WindowStat, ("scope", "indicator", "window"), filters)
    return sorted(rows, key=_sort_key)


def trend(
    db: Session,
    scope: str,
    indicator: str,
    window: str,
    since: datetime | int | None = None,
    until: datetime | int | None = None,
) -> list[TrendPoint]:
    """The series of one (scope, indicator, window), oldest first; ``since``/``until`` inclusive.

    Bounds are aware datetimes or Unix seconds.
    """
    stmt = select(TrendPoint).where(
        TrendPoint.scope == scope,
        TrendPoint.indicator == indicator,
        TrendPoint.window == window,
    )
    if since is not None:
        stmt = stmt.where(TrendPoint.as_of >= _moment(since))
    if until is not None:
        stmt = stmt.where(TrendPoint.as_of <= _moment(until))
    return list(db.scalars(stmt.order_by(TrendPoint.as_of)))


def watched_window_stats(db: Session, pattern: str) -> list[WatchedWindowStat]:
    """The latest as-of of every (scope, indicator, window) of ``pattern``, cluster first."""
    keys = ("pattern", "scope", "indicator", "window")
    rows = latest_rows(db, WatchedWindowStat, keys, [WatchedWindowStat.pattern == pattern])
    return sorted(rows, key=_sort_key)
