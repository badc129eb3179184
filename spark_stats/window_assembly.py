"""Window aggregates as of T and as of every hour end, assembled exactly from collected buckets.

The window of length W and resolution r as of second ``t`` covers
``(t // r - (W/r - 1)) * r <= ts <= t`` (:func:`metrics.window_spec.window_start`). It is a sum of
disjoint pieces taken from four levels of buckets:

* whole buckets of its resolution before the current one: seconds (r = 1 s; the window is only
  these), minutes ``[lo, m0)``, hours ``[lo, h0)`` or days ``[lo, d0)``;
* the current (partial) bucket, from finer levels: the whole hours of the current day
  ``[d0, h0)``, the whole minutes of the current hour ``[h0, m0)`` and the seconds of the
  current minute ``[m0, t]``

(``m0``, ``h0``, ``d0``: start of the minute, hour, day holding ``t``). A bucket that extends
past ``t`` is never used whole. At an hour end ``P = k * 3600 - 1`` the current minute and hour
are complete, so every window is made of whole buckets::

    1m, 5m, 15m      the last 1 / 5 / 15 minute buckets before e = P + 1
    1h, 5h, 15h      the last 1 / 5 / 15 hour buckets
    1d, 5d, 15d      the last 24 / 120 / 360 hour buckets
    1mo, 5mo, 15mo   29 / 149 / 449 whole day buckets before d0, plus the hours [d0, e)

The buckets involved are bounded whatever the data volume -- 15 minutes of seconds, ~7 days of
minutes, 22 days of hours, 16 months of days per scope and indicator -- so they are collected from
Spark once and combined here with exact prefix sums over dense grids (Python integers for the
sums, numpy slice maxima): a week of hourly points for every scope costs well under a second,
where the same series as Spark range-frame window functions took 4-15 s on the 2-core machine.

Inputs are bucket frames (``transforms.BUCKET_COLUMNS``; ``sum`` / ``sumsq`` as ints or
Decimals). Outputs are exact aggregates (``transforms.EXACT_COLUMNS``) with ``count > 0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from pushgrid.metrics.window_spec import DAY, HOUR, LEVELS, WINDOWS, Window, pieces, whole_pieces

from .exact import exact_int
from .transforms import BUCKET_COLUMNS, EXACT_COLUMNS

__all__ = [
    "TREND_HOURS",
    "Ranges",
    "coarsen",
    "needed_ranges",
    "overlay",
    "split_levels",
    "trend_points",
    "window_series",
]

#: Number of hourly as-of points of a trend series (one week).
TREND_HOURS = 168
#: Level name (``s``, ``m``, ``h``, ``d``: the keys of bucket frames) -> buckets it keeps.
_SIZE: dict[str, int] = {level.name: level.size for level in LEVELS}
_NO_MAX = np.iinfo(np.int64).min
Agg = tuple[int, int, int, int]  # count, sum, sumsq, max
_EMPTY: Agg = (0, 0, 0, int(_NO_MAX))


def trend_points(as_of: int, first_ts: int | None, hours: int = TREND_HOURS) -> list[int]:
    """Hour ends ``P = k * 3600 - 1 <= as_of`` of the last ``hours`` hours, from the first sample.

    Points before ``first_ts`` (the first sample) are skipped; no sample at all, no point.
    """
    if first_ts is None:
        return []
    last_end = (as_of + 1) // HOUR * HOUR
    ends = range(last_end - (hours - 1) * HOUR, last_end + 1, HOUR)
    return [e - 1 for e in ends if e - 1 >= first_ts]


@dataclass(frozen=True)
class Ranges:
    """Bucket-start ranges ``[lo, hi)`` per level (``LEVELS`` keys) that a computation reads."""

    spans: dict[str, tuple[int, int]]

    def __getitem__(self, level: str) -> tuple[int, int]:
        return self.spans[level]


def needed_ranges(as_of: int, points: Sequence[int] = ()) -> Ranges:
    """The buckets :func:`window_series` needs for ``as_of`` and the trend ``points``: per level,
    the span of every window's pieces (:func:`pieces` as of ``as_of``, :func:`whole_pieces` at
    each hour end)."""
    now = (piece for w in WINDOWS for piece in pieces(w, as_of))
    trend = (piece for p in points for w in WINDOWS for piece in whole_pieces(w, p + 1))
    spans: dict[str, tuple[int, int]] = {}
    for piece in chain(now, trend):
        lo, hi = spans.get(piece.level.name, (piece.start, piece.end))
        spans[piece.level.name] = (min(lo, piece.start), max(hi, piece.end))
    return Ranges(spans)


def _ints(values: Iterable[Any]) -> np.ndarray:
    """Exact integers as a numpy object array (Python ints: no overflow, exact sums)."""
    return np.array([exact_int(v) for v in values], dtype=object)


class _Grid:
    """Dense buckets ``lo + i * r`` of one series with exact prefix sums and per-bucket max."""

    def __init__(self, rows: pd.DataFrame | None, lo: int, hi: int, r: int) -> None:
        n = max(0, (hi - lo) // r)
        self.lo, self.r, self.n = lo, r, n
        count = np.zeros(n, dtype=np.int64)
        total = np.zeros(n, dtype=object)
        squares = np.zeros(n, dtype=object)
        self.maximum = np.full(n, _NO_MAX, dtype=np.int64)
        if rows is not None and len(rows):
            index = (rows["bucket_start"].to_numpy(np.int64) - lo) // r
            inside = (index >= 0) & (index < n)
            index = index[inside]
            count[index] = rows["count"].to_numpy(np.int64)[inside]
            total[index] = _ints(rows["sum"].to_numpy(object)[inside])
            squares[index] = _ints(rows["sumsq"].to_numpy(object)[inside])
            self.maximum[index] = rows["max"].to_numpy(np.int64)[inside]
        zero = np.zeros(1, dtype=object)
        self.count = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
        self.total = np.concatenate([zero, np.cumsum(total)]) if n else zero
        self.squares = np.concatenate([zero, np.cumsum(squares)]) if n else zero

    def span(self, start: int, end: int) -> Agg:
        """Aggregate of the buckets with ``start <= bucket_start < end``."""
        if end <= start:
            return _EMPTY
        a = (start - self.lo) // self.r
        b = (end - self.lo) // self.r
        if a < 0 or b > self.n:
            raise ValueError(f"range [{start}, {end}) outside the grid")
        if b <= a:
            return _EMPTY
        return (
            int(self.count[b] - self.count[a]),
            int(self.total[b] - self.total[a]),
            int(self.squares[b] - self.squares[a]),
            int(self.maximum[a:b].max()),
        )


def _merge(*aggs: Agg) -> Agg:
    return (
        sum(a[0] for a in aggs),
        sum(a[1] for a in aggs),
        sum(a[2] for a in aggs),
        max(a[3] for a in aggs),
    )


def _window_agg(grids: Mapping[str, _Grid], w: Window, t: int) -> Agg:
    """Aggregate of window ``w`` as of ``t``: the sum of its pieces (module docstring)."""
    return _merge(*(grids[p.level.name].span(p.start, p.end) for p in pieces(w, t)))


def _hour_end_agg(grids: Mapping[str, _Grid], w: Window, p: int) -> Agg:
    """Aggregate of window ``w`` as of the hour end ``p`` (whole buckets only)."""
    return _merge(*(grids[x.level.name].span(x.start, x.end) for x in whole_pieces(w, p + 1)))


def _series(levels: Mapping[str, pd.DataFrame]) -> dict[tuple[str, str], dict[str, pd.DataFrame]]:
    """(scope, indicator) -> level -> that series' bucket rows (empty levels left out)."""
    groups: dict[tuple[str, str], dict[str, pd.DataFrame]] = {}
    for level, frame in levels.items():
        if level not in _SIZE or frame is None or len(frame) == 0:
            continue
        for key, rows in frame.groupby(["scope", "indicator"], sort=True):
            groups.setdefault((str(key[0]), str(key[1])), {})[level] = rows
    return groups


def _rows(
    scope: str,
    indicator: str,
    grids: Mapping[str, _Grid],
    times: Sequence[int],
    aggregate: Callable[[Mapping[str, _Grid], Window, int], Agg],
) -> list[tuple[Any, ...]]:
    """One row per time and window that has data, in time then window order."""
    rows: list[tuple[Any, ...]] = []
    for at in times:
        for w in WINDOWS:
            agg = aggregate(grids, w, at)
            if agg[0] > 0:
                rows.append((scope, indicator, w.name, at, *agg))
    return rows


def window_series(
    levels: Mapping[str, pd.DataFrame], as_of: int, points: Sequence[int] = ()
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exact aggregates of every window as of ``as_of`` and as of each hour end in ``points``.

    ``levels`` maps ``"s"``, ``"m"``, ``"h"``, ``"d"`` to bucket frames covering at least
    :func:`needed_ranges` (extra rows are ignored; a missing level means no buckets).
    Returns ``(now, trend)``, both ``EXACT_COLUMNS`` with ``count > 0`` only.
    """
    if any(p % HOUR != HOUR - 1 or p > as_of for p in points):
        raise ValueError("trend points must be hour ends (k * 3600 - 1) not after as_of")
    ranges = needed_ranges(as_of, points)
    now: list[tuple[Any, ...]] = []
    trend: list[tuple[Any, ...]] = []
    for (scope, indicator), rows_by_level in sorted(_series(levels).items()):
        grids = {
            lv.name: _Grid(rows_by_level.get(lv.name), *ranges[lv.name], lv.resolution)
            for lv in LEVELS
        }
        now += _rows(scope, indicator, grids, [as_of], _window_agg)
        trend += _rows(scope, indicator, grids, points, _hour_end_agg)
    columns = list(EXACT_COLUMNS)
    return (
        pd.DataFrame.from_records(now, columns=columns),
        pd.DataFrame.from_records(trend, columns=columns),
    )


def coarsen(buckets: pd.DataFrame, resolution: int) -> pd.DataFrame:
    """Merge bucket rows into buckets of ``resolution`` seconds (exact; pandas twin of
    :func:`spark_stats.transforms.coarser_buckets`, for the few in-memory overlay buckets)."""
    acc: dict[tuple[str, str, int], list[int]] = {}
    for scope, indicator, start, c, s, q, m in buckets.loc[:, list(BUCKET_COLUMNS)].itertuples(
        index=False, name=None
    ):
        key = (scope, indicator, int(start) - int(start) % resolution)
        cur = acc.get(key)
        if cur is None:
            acc[key] = [int(c), exact_int(s), exact_int(q), int(m)]
        else:
            cur[0] += int(c)
            cur[1] += exact_int(s)
            cur[2] += exact_int(q)
            cur[3] = max(cur[3], int(m))
    return pd.DataFrame.from_records(
        [(*key, *vals) for key, vals in sorted(acc.items())], columns=list(BUCKET_COLUMNS)
    )


def overlay(
    stored: Mapping[str, pd.DataFrame],
    overlay_minutes: pd.DataFrame,
    hours: Iterable[int],
) -> dict[str, pd.DataFrame]:
    """Stored minute / hour / day buckets with the given ``hours`` replaced.

    ``overlay_minutes`` are the minute buckets of those hours recomputed from every sample
    (compacted + live tail); their hour buckets replace the stored ones, and the days that
    contain them are re-merged from their hour buckets (so ``stored["h"]`` must hold every hour
    of those days). Seconds (``"s"``) pass through.
    """
    hour_set = {int(h) for h in hours}
    if not hour_set:
        return dict(stored)
    day_set = {h - h % DAY for h in hour_set}
    out = dict(stored)
    empty = pd.DataFrame(columns=list(BUCKET_COLUMNS))
    minutes = stored.get("m", empty)
    hours_df = stored.get("h", empty)
    days = stored.get("d", empty)
    keep_m = ~(minutes["bucket_start"].astype("int64") // HOUR * HOUR).isin(hour_set)
    out["m"] = pd.concat([minutes[keep_m], overlay_minutes], ignore_index=True)
    keep_h = ~hours_df["bucket_start"].astype("int64").isin(hour_set)
    out["h"] = pd.concat([hours_df[keep_h], coarsen(overlay_minutes, HOUR)], ignore_index=True)
    in_days = (out["h"]["bucket_start"].astype("int64") // DAY * DAY).isin(day_set)
    keep_d = ~days["bucket_start"].astype("int64").isin(day_set)
    out["d"] = pd.concat([days[keep_d], coarsen(out["h"][in_days], DAY)], ignore_index=True)
    return out


def split_levels(collected: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Level-tagged bucket rows (``BUCKET_COLUMNS`` + ``level``) as one frame per level.

    A bucket read twice (the hours of an overlay day also fall in the hour range) is kept once.
    """
    key = ["scope", "indicator", "bucket_start"]
    return {
        str(level): rows.drop(columns="level").drop_duplicates(key).reset_index(drop=True)
        for level, rows in collected.groupby("level")
    }
