"""Trend series: window aggregates as of every hour end, from minute / hour / day buckets.

The console charts each window statistic over the last week, one point per hour: as of
``P = k * 3600 - 1`` (the last second of an hour). At such a point every window is a whole number
of buckets (``e = P + 1``, the exclusive end):

===========================  ================================================================
windows                      covered samples = buckets
===========================  ================================================================
1m, 5m, 15m (r = 1 s)        the last 1 / 5 / 15 *minute* buckets before ``e``
1h, 5h, 15h (r = 60 s)       the last 1 / 5 / 15 *hour* buckets before ``e``
1d, 5d, 15d (r = 3600 s)     the last 24 / 120 / 360 hour buckets before ``e``
1mo, 5mo, 15mo (r = 1 day)   29 / 149 / 449 whole *day* buckets before ``d0 = P // 86400 * 86400``
                             plus the hour buckets of the current day ``[d0, e)``
===========================  ================================================================

(this is :func:`metrics.windows.window_start` evaluated at ``P``). The buckets involved are
bounded whatever the data volume -- the last 15 minutes of each hour, 22 days of hours and
16 months of days per scope and indicator -- so they are collected from Spark and combined here
with exact prefix sums (Python integers) and slice maxima: a week of
hourly points for all scopes costs well under a second, where Spark range-frame window
functions over the same buckets took 4-15 s on the reference machine (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from metrics.windows import DAY, HOUR, MINUTE, WINDOWS

from .exact import exact_int
from .transforms import EXACT_COLUMNS, longest_buckets

__all__ = ["TREND_HOURS", "TrendRanges", "trend_exact", "trend_points", "trend_ranges"]

#: Number of hourly as-of points of a trend series (one week).
TREND_HOURS = 168
_NO_MAX = np.iinfo(np.int64).min


def trend_points(as_of: int, first_ts: int | None, hours: int = TREND_HOURS) -> list[int]:
    """Hour ends ``P = k * 3600 - 1 <= as_of`` of the last ``hours`` hours, from the first sample.

    Points before ``first_ts`` (the first sample of the warehouse) are skipped; no sample at
    all gives no point.
    """
    if first_ts is None:
        return []
    last_end = (as_of + 1) // HOUR * HOUR
    ends = range(last_end - (hours - 1) * HOUR, last_end + 1, HOUR)
    return [e - 1 for e in ends if e - 1 >= first_ts]


@dataclass(frozen=True)
class TrendRanges:
    """Bucket-start ranges ``[lo, hi)`` per level that :func:`trend_exact` needs."""

    minutes: tuple[int, int]
    hours: tuple[int, int]
    days: tuple[int, int]


def trend_ranges(points: Sequence[int]) -> TrendRanges:
    n = longest_buckets()
    first_end, last_end = min(points) + 1, max(points) + 1
    first_day = min(points) // DAY * DAY
    last_day = max(points) // DAY * DAY
    return TrendRanges(
        minutes=(first_end - n[1], last_end),
        hours=(first_end - max(w.length for w in WINDOWS if w.resolution in (MINUTE, HOUR)), last_end),
        days=(first_day - (n[DAY] - 1) * DAY, last_day),
    )


@dataclass
class _Grid:
    """Dense buckets ``lo + i * r`` of one series with exact prefix sums."""

    lo: int
    r: int
    count: np.ndarray  # prefix sums, length n + 1 (int64)
    total: list[int]  # prefix sums (Python ints)
    squares: list[int]
    maximum: np.ndarray  # per bucket (int64, _NO_MAX when empty)

    @classmethod
    def build(cls, rows: pd.DataFrame | None, lo: int, hi: int, r: int) -> _Grid:
        n = max(0, (hi - lo) // r)
        count = np.zeros(n, dtype=np.int64)
        total = [0] * n
        squares = [0] * n
        maximum = np.full(n, _NO_MAX, dtype=np.int64)
        if rows is not None:
            for start, c, s, q, m in rows.loc[
                :, ["bucket_start", "count", "sum", "sumsq", "max"]
            ].itertuples(index=False, name=None):
                i = (int(start) - lo) // r
                if 0 <= i < n:
                    count[i] = int(c)
                    total[i] = exact_int(s)
                    squares[i] = exact_int(q)
                    maximum[i] = int(m)
        prefix_count = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
        prefix_total = [0] * (n + 1)
        prefix_squares = [0] * (n + 1)
        for i in range(n):
            prefix_total[i + 1] = prefix_total[i] + total[i]
            prefix_squares[i + 1] = prefix_squares[i] + squares[i]
        return cls(lo, r, prefix_count, prefix_total, prefix_squares, maximum)

    def span(self, start: int, end: int) -> tuple[int, int, int, int]:
        """``(count, sum, sumsq, max)`` of the buckets with ``start <= bucket_start < end``."""
        a = (start - self.lo) // self.r
        b = (end - self.lo) // self.r
        if a < 0 or b > len(self.maximum):
            raise ValueError("range outside the grid")
        if b <= a:
            return 0, 0, 0, int(_NO_MAX)
        return (
            int(self.count[b] - self.count[a]),
            self.total[b] - self.total[a],
            self.squares[b] - self.squares[a],
            int(self.maximum[a:b].max()),
        )


def _merge(
    a: tuple[int, int, int, int], b: tuple[int, int, int, int]
) -> tuple[int, int, int, int]:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], max(a[3], b[3])


def trend_exact(
    minutes: pd.DataFrame,
    hours: pd.DataFrame,
    days: pd.DataFrame,
    points: Sequence[int],
) -> pd.DataFrame:
    """Exact aggregates (``EXACT_COLUMNS``) of every window as of every hour end in ``points``.

    ``minutes``, ``hours`` and ``days`` hold buckets (``BUCKET_COLUMNS``; ``sum``/``sumsq`` as
    ints or Decimals) covering at least :func:`trend_ranges`. Only rows with ``count > 0``.
    """
    if not points:
        return pd.DataFrame(columns=list(EXACT_COLUMNS))
    if any(p % HOUR != HOUR - 1 for p in points):
        raise ValueError("trend points must be hour ends (k * 3600 - 1)")
    ranges = trend_ranges(points)
    groups: dict[tuple[str, str], dict[str, pd.DataFrame]] = {}
    for name, frame in (("m", minutes), ("h", hours), ("d", days)):
        if len(frame) == 0:
            continue
        for key, rows in frame.groupby(["scope", "indicator"], sort=True):
            groups.setdefault((str(key[0]), str(key[1])), {})[name] = rows
    records: list[tuple[Any, ...]] = []
    for (scope, indicator), levels in sorted(groups.items()):
        grid_m = _Grid.build(levels.get("m"), *ranges.minutes, MINUTE)
        grid_h = _Grid.build(levels.get("h"), *ranges.hours, HOUR)
        grid_d = _Grid.build(levels.get("d"), *ranges.days, DAY)
        for p in points:
            end = p + 1
            d0 = p - p % DAY
            today = grid_h.span(d0, end)
            for w in WINDOWS:
                if w.resolution == 1:
                    agg = grid_m.span(end - w.length, end)
                elif w.resolution in (MINUTE, HOUR):
                    agg = grid_h.span(end - w.length, end)
                else:
                    agg = _merge(grid_d.span(d0 - (w.buckets - 1) * DAY, d0), today)
                if agg[0] > 0:
                    records.append((scope, indicator, w.name, p, *agg))
    return pd.DataFrame.from_records(records, columns=list(EXACT_COLUMNS))
