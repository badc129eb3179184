"""The pipeline's results from SQL: window statistics (with their age) and trend series.

Read through :mod:`metrics.sqlstore` (``window_stats`` returns the latest as-of of every
(scope, indicator, window); ``trend`` a series oldest first). A statistic is ``stale`` when the
pipeline wrote it more than ``Admin.StaleAfter`` seconds ago (``computed_at``): the pipeline's
``as_of`` is the archive's last closed hour, so it is always somewhat old; a run that stopped
happening is what the flag shows.
"""

from __future__ import annotations

import math
from datetime import datetime

from sqlalchemy.orm import Session

from pushgrid.metrics import sqlstore
from pushgrid.metrics.sqlstore.models import (
    DeliveryWindowStat,
    TrendPoint,
    WatchedWindowStat,
    WindowStat,
    to_unix,
    utc_now,
)
from pushgrid.metrics.window_spec import LOW_COVERAGE, coverage
from pushgrid.ops.api.delivery_windows import DeliveryWindowList, DeliveryWindowOut
from pushgrid.ops.statistics import TrendQuery
from pushgrid.protocol.latency import LOSS_KINDS

from ..schemas import (
    TrendPointOut,
    TrendSeries,
    WatchedWindowStatList,
    WindowStatList,
    WindowStatOut,
)


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def window_stat_out(
    row: WindowStat | WatchedWindowStat, now: datetime, stale_after: float
) -> WindowStatOut:
    age = max(0.0, (now - row.computed_at).total_seconds())
    covered = _coverage(row)
    return WindowStatOut(
        scope=row.scope,
        indicator=row.indicator,
        window=row.window,
        as_of=row.as_of,
        count=row.count,
        coverage=covered,
        low_coverage=covered < LOW_COVERAGE,
        max=_finite(row.max),
        avg=_finite(row.avg),
        stddev=_finite(row.stddev),
        run_id=row.run_id,
        computed_at=row.computed_at,
        age_seconds=age,
        stale=age > stale_after,
    )


def _coverage(row: WindowStat | TrendPoint | WatchedWindowStat) -> float:
    """The share of the window's seconds with a sample, from the stored count and as-of."""
    return coverage(row.window, row.count, to_unix(row.as_of))


def delivery_window_out(
    row: DeliveryWindowStat, now: datetime, stale_after: float
) -> DeliveryWindowOut:
    age = max(0.0, (now - row.computed_at).total_seconds())
    return DeliveryWindowOut(
        scope=row.scope,
        series=row.series,
        window=row.window,
        as_of=row.as_of,
        count=row.count,
        p50=_finite(row.p50),
        p90=_finite(row.p90),
        p99=_finite(row.p99),
        p999=_finite(row.p999),
        buckets=row.buckets,
        loss={kind: getattr(row, kind) for kind in LOSS_KINDS},
        run_id=row.run_id,
        computed_at=row.computed_at,
        age_seconds=age,
        stale=age > stale_after,
    )


def trend_point_out(row: TrendPoint) -> TrendPointOut:
    return TrendPointOut(
        as_of=row.as_of,
        count=row.count,
        coverage=_coverage(row),
        max=_finite(row.max),
        avg=_finite(row.avg),
        stddev=_finite(row.stddev),
        run_id=row.run_id,
    )


class StatisticsService:
    def __init__(self, db: Session, stale_after: float) -> None:
        self.db = db
        self.stale_after = stale_after

    def window_stats(
        self,
        scope: str | None = None,
        indicator: str | None = None,
        window: str | None = None,
    ) -> WindowStatList:
        rows = sqlstore.window_stats(self.db, scope=scope, indicator=indicator, window=window)
        now = utc_now()
        return WindowStatList(
            items=[window_stat_out(row, now, self.stale_after) for row in rows],
            stale_after_seconds=self.stale_after,
        )

    def watched_window_stats(self, pattern: str) -> WatchedWindowStatList:
        """The latest stored windows of one watched pattern (empty before a run saw it)."""
        rows = sqlstore.watched_window_stats(self.db, pattern)
        now = utc_now()
        return WatchedWindowStatList(
            pattern=pattern,
            items=[window_stat_out(row, now, self.stale_after) for row in rows],
            stale_after_seconds=self.stale_after,
        )

    def delivery_windows(
        self, scope: str | None = None, series: str | None = None
    ) -> DeliveryWindowList:
        """The latest stored delivery latency windows (ADR 062), optionally filtered."""
        rows = sqlstore.delivery_window_stats(self.db, scope=scope, series=series)
        now = utc_now()
        return DeliveryWindowList(
            items=[delivery_window_out(row, now, self.stale_after) for row in rows],
            stale_after_seconds=self.stale_after,
        )

    def trend(self, query: TrendQuery) -> TrendSeries:
        rows = sqlstore.trend(
            self.db, query.scope, query.indicator, query.window, query.since, query.until
        )
        return TrendSeries(
            scope=query.scope,
            indicator=query.indicator,
            window=query.window,
            points=[trend_point_out(row) for row in rows],
        )
