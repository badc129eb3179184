"""Rolling-window max / average / standard deviation of per-second indicator samples.

Each indicator receives at most one sample per second (``ts`` = Unix time in whole seconds,
UTC). For every indicator we report, over twelve windows, the :class:`~metrics.stats.Moments`
(count, average, population standard deviation, maximum) of the samples the window covers.

The window definition (names, lengths, resolutions, bucket levels) lives in
:mod:`metrics.window_spec`.

Statistics are those of :mod:`metrics.stats`: the standard deviation is the *population* one
(``ddof=0``), ``max`` is exact, ``count`` is exact, and the average and standard deviation equal
``math.fsum(samples) / count`` and ``numpy.std(samples)`` on the raw samples to within a few ulps
(the tests require 1e-12 and 1e-9 relative respectively, including samples near 1e10).

Rules for callers
-----------------
* ``add(ts, value)``: ``ts`` must be strictly greater than the previous sample's (a duplicate or
  older timestamp raises :class:`ValueError` and leaves the state unchanged; the sampler keeps the
  first sample of a second). ``value`` must be finite.
* ``stats(now)`` needs ``now >= `` the last sample's ``ts`` (otherwise :class:`ValueError`): the
  coarse levels cannot un-merge a sample that is newer than ``now``. ``now`` may be later than the
  last sample; a later ``add`` may still use any ``ts`` after the last sample, even ``< now``.

Storage and cost
----------------
Four levels of epoch-aligned buckets, each a ring indexed by ``bucket index % size``:

========  ==========  =====  ==============================
level     resolution  size   used by
========  ==========  =====  ==============================
second    1 s         900    1m, 5m, 15m (raw sample values)
minute    60 s        900    1h, 5h, 15h
hour      3600 s      360    1d, 5d, 15d
day       86400 s     450    1mo, 5mo, 15mo
========  ==========  =====  ==============================

A ring slot holds a closed bucket (a :class:`Moments`; a float for seconds) and its bucket index.
The bucket that contains the last sample is "open" at each level: the open minute keeps its raw
values (<= 60 floats), the open hour its closed minutes (<= 60 :class:`Moments`), the open day its
closed hours (<= 24). Memory per indicator is therefore bounded by ``MAX_BUCKETS`` = 2610 ring
slots (:mod:`metrics.window_spec`), plus at most 144 entries in the open lists (all of which
also sit in a ring) and a constant number of cached :class:`Moments` -- whatever the number
of samples or the time span.

``add`` is O(1): it writes one ring slot and, when the sample starts a new minute (hour, day),
rolls the finished minute (hour, day) up from its <= 60 values (<= 60 minutes, <= 24 hours) into
one bucket of the next level -- samples are never re-scanned. ``stats`` merges at most the ring of
each level (O(2610)), and caches the merge of a level's closed buckets until ``floor(now / r)`` or
that ring changes, so a call per second costs about the 900-slot second ring plus a few merges.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Generic, TypeVar

from .stats import Moments
from .window_spec import DAY, HOUR, LEVELS, MINUTE, WINDOW_NAMES, windows_of

__all__ = ["IndicatorSet", "RollingWindows"]


T = TypeVar("T")


class _Ring(Generic[T]):
    """Fixed-size ring of (bucket index, item); slot = index % size."""

    __slots__ = ("items", "size", "tags", "version")

    def __init__(self, size: int, fill: T) -> None:
        self.size = size
        self.tags: list[int | None] = [None] * size
        self.items: list[T] = [fill] * size
        self.version = 0

    def put(self, index: int, item: T) -> None:
        slot = index % self.size
        self.tags[slot] = index
        self.items[slot] = item
        self.version += 1

    def between(self, first: int, last: int) -> list[tuple[int, T]]:
        """Stored ``(index, item)`` with ``first <= index <= last``."""
        return [
            (t, it)
            for t, it in zip(self.tags, self.items, strict=True)
            if t is not None and first <= t <= last
        ]

    def occupied(self) -> int:
        return sum(t is not None for t in self.tags)


_SECOND_WINDOWS = windows_of(LEVELS[0])
_COARSE_WINDOWS = tuple(windows_of(level) for level in LEVELS[1:])  # minute, hour, day levels


class RollingWindows:
    """Rolling-window statistics of ONE indicator (see the module docstring for the contract)."""

    def __init__(self) -> None:
        self._last: int | None = None
        self._adds = 0  # bumped by every add: version of the open buckets
        self._seconds: _Ring[float] = _Ring(LEVELS[0].size, 0.0)
        empty = Moments.empty()
        # closed minute, hour and day buckets
        self._rings: tuple[_Ring[Moments], ...] = tuple(
            _Ring(level.size, empty) for level in LEVELS[1:]
        )
        # index of the open minute, hour, day (the ones containing the last sample)
        self._open = [0, 0, 0]
        self._minute_values: list[float] = []  # raw samples of the open minute
        self._hour_parts: list[Moments] = []  # closed minutes of the open hour
        self._day_parts: list[Moments] = []  # closed hours of the open day
        # caches: (key, value)
        self._open_cache: tuple[int, tuple[Moments, Moments, Moments]] | None = None
        self._hour_closed: Moments | None = None  # merge of _hour_parts
        self._day_closed: Moments | None = None  # merge of _day_parts
        self._ring_cache: list[tuple[int, int, tuple[Moments, ...]] | None] = [None, None, None]
        self._stats_cache: tuple[int, int, dict[str, Moments]] | None = None

    @property
    def last_ts(self) -> int | None:
        """Timestamp of the last sample added, or ``None``."""
        return self._last

    def check(self, ts: int, value: float) -> None:
        """Raise :class:`ValueError` if ``add(ts, value)`` would be rejected."""
        if self._last is not None and ts <= self._last:
            raise ValueError(
                f"sample timestamp {ts} is not after the previous one ({self._last}): "
                "one sample per second, timestamps increasing"
            )
        if not math.isfinite(value):
            raise ValueError(f"sample value must be finite, got {value!r}")

    def add(self, ts: int, value: float) -> None:
        """Record the sample of second ``ts`` (strictly after the previous one)."""
        self.check(ts, value)
        value = float(value)
        minute = ts // MINUTE
        if self._last is not None and minute != self._open[0]:
            self._roll_up(ts)
        self._open[0] = minute
        self._open[1] = ts // HOUR
        self._open[2] = ts // DAY
        self._minute_values.append(value)
        self._seconds.put(ts, value)
        self._last = ts
        self._adds += 1

    def _roll_up(self, ts: int) -> None:
        """Close the open minute (and hour, day) before a sample of a later minute is added."""
        closed_minute = Moments.of_values(self._minute_values)
        self._minute_values = []
        self._rings[0].put(self._open[0], closed_minute)
        self._hour_parts.append(closed_minute)
        self._hour_closed = None
        if ts // HOUR == self._open[1]:
            return
        closed_hour = self._closed_of_open_hour()
        self._hour_parts = []
        self._hour_closed = None
        self._rings[1].put(self._open[1], closed_hour)
        self._day_parts.append(closed_hour)
        self._day_closed = None
        if ts // DAY == self._open[2]:
            return
        closed_day = self._closed_of_open_day()
        self._day_parts = []
        self._day_closed = None
        self._rings[2].put(self._open[2], closed_day)

    def _closed_of_open_hour(self) -> Moments:
        if self._hour_closed is None:
            self._hour_closed = Moments.merge_all(self._hour_parts)
        return self._hour_closed

    def _closed_of_open_day(self) -> Moments:
        if self._day_closed is None:
            self._day_closed = Moments.merge_all(self._day_parts)
        return self._day_closed

    def _open_buckets(self) -> tuple[Moments, Moments, Moments]:
        """Moments of the open minute, hour and day (each includes the finer open buckets)."""
        if self._open_cache is None or self._open_cache[0] != self._adds:
            minute = Moments.of_values(self._minute_values)
            hour = Moments.merge_all((self._closed_of_open_hour(), minute))
            day = Moments.merge_all((self._closed_of_open_day(), hour))
            self._open_cache = (self._adds, (minute, hour, day))
        return self._open_cache[1]

    def _closed_parts(self, level: int, current: int) -> tuple[Moments, ...]:
        """Per window of ``level``: merge of closed buckets in ``[current - W/r + 1, current)``."""
        ring = self._rings[level]
        cached = self._ring_cache[level]
        if cached is not None and cached[0] == current and cached[1] == ring.version:
            return cached[2]
        windows = _COARSE_WINDOWS[level]
        stored = ring.between(current - (windows[-1].buckets - 1), current - 1)
        result = tuple(
            Moments.merge_all(m for t, m in stored if t >= current - (w.buckets - 1))
            for w in windows
        )
        self._ring_cache[level] = (current, ring.version, result)
        return result

    def stats(self, now: int) -> dict[str, Moments]:
        """Moments of every window at ``now`` (``now >= last_ts``), keyed by window name."""
        if self._last is None:
            return dict.fromkeys(WINDOW_NAMES, Moments.empty())
        if now < self._last:
            raise ValueError(
                f"stats(now={now}) is earlier than the last sample ({self._last}); "
                "windows can only be evaluated at or after the last sample"
            )
        cached = self._stats_cache
        if cached is not None and cached[0] == now and cached[1] == self._adds:
            return dict(cached[2])
        out: dict[str, Moments] = {}
        # second level: raw values, two-pass
        widest = _SECOND_WINDOWS[-1]
        recent = self._seconds.between(now - (widest.buckets - 1), now)
        for w in _SECOND_WINDOWS:
            first = now - (w.buckets - 1)
            out[w.name] = Moments.of_values([v for t, v in recent if t >= first])
        # minute, hour, day levels: cached closed buckets + the open bucket if inside the window
        opened = self._open_buckets()
        for level, windows in enumerate(_COARSE_WINDOWS):
            current = now // windows[0].resolution
            closed = self._closed_parts(level, current)
            open_index = self._open[level]
            for w, part in zip(windows, closed, strict=True):
                if open_index >= current - (w.buckets - 1):
                    out[w.name] = Moments.merge(part, opened[level])
                else:
                    out[w.name] = part
        self._stats_cache = (now, self._adds, out)
        return dict(out)

    def stored_buckets(self) -> int:
        """Occupied ring slots over all levels (never more than ``MAX_BUCKETS``)."""
        return self._seconds.occupied() + sum(r.occupied() for r in self._rings)

    def open_entries(self) -> int:
        """Entries in the open-bucket lists (never more than 60 + 60 + 24)."""
        return len(self._minute_values) + len(self._hour_parts) + len(self._day_parts)


class IndicatorSet:
    """One :class:`RollingWindows` per named indicator, fed together by the sampler."""

    def __init__(self, names: Iterable[str]) -> None:
        self._windows: dict[str, RollingWindows] = {name: RollingWindows() for name in names}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._windows)

    def __getitem__(self, name: str) -> RollingWindows:
        return self._windows[name]

    def __contains__(self, name: object) -> bool:
        return name in self._windows

    def add_sample(self, ts: int, values: Mapping[str, float]) -> None:
        """Add ``values[name]`` at second ``ts`` for each indicator present in ``values``.

        An indicator missing from ``values`` gets no sample for ``ts`` (a gap, not a zero). An
        unknown name raises :class:`KeyError`; an invalid timestamp or value raises
        :class:`ValueError`. Everything is checked first: on error nothing is added.
        """
        for name, value in values.items():
            if name not in self._windows:
                raise KeyError(f"unknown indicator {name!r}")
            self._windows[name].check(ts, value)
        for name, value in values.items():
            self._windows[name].add(ts, value)

    def snapshot(self, now: int) -> dict[str, dict[str, Moments]]:
        """``{indicator: {window name: Moments}}`` at ``now`` (see :meth:`RollingWindows.stats`)."""
        return {name: w.stats(now) for name, w in self._windows.items()}
