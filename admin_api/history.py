"""The admin API's history: every member's per-second samples over a bounded time (ADR 026).

One :class:`SecondRing` per member holds the seven indicators of each second of the last
``seconds`` (``Admin.HistorySeconds``, default one hour) in two flat arrays allocated once: a
second's slot is ``ts % seconds``, so memory never grows (64 bytes a member-second: 230 KB a
member-hour, docs/admin-api.md) and a second written twice (two polls that overlap) simply
rewrites the same slot. A slot whose stamp is not the asked second is an absent second.

Pure: :mod:`admin_api.services.history` polls the members and serves the routes.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pushgrid.metrics.indicators import INDICATOR_NAMES

WIDTH = len(INDICATOR_NAMES)
_NAN = math.nan


@dataclass(frozen=True)
class Series:
    """Seconds with a sample (ascending) and each indicator's values at those seconds."""

    seconds: list[int]
    values: dict[str, list[float | None]]


class SecondRing:
    """The per-second samples of one member over its last ``capacity`` seconds."""

    __slots__ = ("capacity", "newest", "stamps", "values")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.stamps = array("q", bytes(8 * capacity))  # 0: the slot never held a second
        self.values = array("d", bytes(8 * capacity * WIDTH))
        self.newest = 0

    def put(self, ts: int, sample: Mapping[str, float | None]) -> None:
        """Record second ``ts`` (older than the ring's reach: ignored; indicators not in
        ``sample`` are absent)."""
        if ts <= 0 or ts <= self.newest - self.capacity:
            return
        slot = ts % self.capacity
        self.stamps[slot] = ts
        base = slot * WIDTH
        for index, name in enumerate(INDICATOR_NAMES):
            value = sample.get(name)
            self.values[base + index] = _NAN if value is None else float(value)
        self.newest = max(self.newest, ts)

    def get(self, ts: int) -> tuple[float, ...] | None:
        """The seven values of second ``ts`` (NaN: that indicator was absent), None: no sample."""
        if ts <= 0:
            return None
        slot = ts % self.capacity
        if self.stamps[slot] != ts:
            return None
        base = slot * WIDTH
        return tuple(self.values[base : base + WIDTH])

    def copy(self) -> SecondRing:
        """A copy to read away from the writer (two array copies: O(capacity), no Python loop)."""
        twin = SecondRing.__new__(SecondRing)
        twin.capacity, twin.newest = self.capacity, self.newest
        twin.stamps, twin.values = array("q", self.stamps), array("d", self.values)
        return twin

    def series(self, since: int, until: int) -> Series:
        """The seconds held in ``[since, until]``: the range is clamped to the ring's reach
        first, so any range costs O(capacity) at most (issue 34: ``until`` in year 9999)."""
        first = max(since, self.newest - self.capacity + 1)
        last = min(until, self.newest)
        stamps, values, capacity = self.stamps, self.values, self.capacity
        seconds = [ts for ts in range(first, last + 1) if stamps[ts % capacity] == ts]
        bases = [(ts % capacity) * WIDTH for ts in seconds]
        columns: dict[str, list[float | None]] = {}
        for index, name in enumerate(INDICATOR_NAMES):
            column = [values[base + index] for base in bases]
            columns[name] = [None if value != value else value for value in column]  # NaN
        return Series(seconds, columns)


class HistoryStore:
    """Every member's :class:`SecondRing`, created at a member's first sample."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.rings: dict[str, SecondRing] = {}

    def put(self, member: str, ts: int, sample: Mapping[str, float | None]) -> None:
        ring = self.rings.get(member)
        if ring is None:
            ring = self.rings[member] = SecondRing(self.seconds)
        ring.put(ts, sample)

    def newest(self) -> int:
        return max((ring.newest for ring in self.rings.values()), default=0)

    def oldest_held(self) -> int:
        """The oldest second any ring can still hold (0: nothing held yet)."""
        newest = self.newest()
        return max(1, newest - self.seconds + 1) if newest else 0

    def copy(self) -> HistoryStore:
        """A copy of every ring, to be read on another thread while the poller writes."""
        twin = HistoryStore(self.seconds)
        twin.rings = {name: ring.copy() for name, ring in self.rings.items()}
        return twin

    def members(self) -> list[str]:
        return list(self.rings)

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the rings of members no longer managed (their memory with them)."""
        kept = set(keep)
        for name in [name for name in self.rings if name not in kept]:
            del self.rings[name]

    def series(self, member: str, since: int, until: int) -> Series:
        ring = self.rings.get(member)
        if ring is None:
            return Series([], {name: [] for name in INDICATOR_NAMES})
        return ring.series(since, until)

    def nbytes(self) -> int:
        """The bytes the sample arrays hold (the store's bounded part)."""
        return sum(
            ring.stamps.itemsize * len(ring.stamps) + ring.values.itemsize * len(ring.values)
            for ring in self.rings.values()
        )


def cluster_series(parts: Sequence[Series], until: int) -> Series:
    """Each second's sum over the members that have a sample of it, up to ``until``.

    The caller sets ``until`` to the newest second every live member has reported, so the last
    second is never a partial sum of the members polled so far. A second that a member lacks
    between its first and its last sample (it hung: SIGSTOP, a stalled loop) is left out: a
    sum without it would draw that member's sessions dropping to 0 while they stayed connected
    (issue 34, 4.5); a gap says "no data" instead.
    """
    holes = _holes(parts)
    totals: dict[int, list[float | None]] = {}
    for part in parts:
        for position, ts in enumerate(part.seconds):
            if ts > until:
                break
            if ts in holes:
                continue
            row = totals.setdefault(ts, [None] * WIDTH)
            for index, name in enumerate(INDICATOR_NAMES):
                value = part.values[name][position]
                if value is not None:
                    row[index] = (row[index] or 0.0) + value
    seconds = sorted(totals)
    values = {
        name: [totals[ts][index] for ts in seconds] for index, name in enumerate(INDICATOR_NAMES)
    }
    return Series(seconds, values)


def _holes(parts: Sequence[Series]) -> set[int]:
    """The seconds some member lacks between its first and its last sample (pure)."""
    holes: set[int] = set()
    for part in parts:
        for before, after in zip(part.seconds, part.seconds[1:], strict=False):
            holes.update(range(before + 1, after))
    return holes
