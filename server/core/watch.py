"""Watched subjects: which patterns an operator watches, and which patterns a subject counts for.

Patterns use the server's one pattern syntax (pushgrid/protocol/subjects.py, the entitlement
permissions' syntax): ``/Stocks/NYSE/*`` covers ``/Stocks/NYSE/IBM`` and deeper paths, ``*``
covers everything. They come from WatchedSubjects.Patterns and, at run time, from the admin API
(the ``pushgrid:type=WatchedSubjects`` MBean's ``watch``/``unwatch`` operations), at most
WatchedSubjects.MaxPatterns of them.

Cost (ADR 029): nothing is added per message. The hub already counts per-subject deltas (its
``tally``, for the hot subjects); once a second :meth:`Watchlist.absorb` adds each subject's
deltas to the patterns that match it. Which patterns match a subject is computed once, on first
sight, and cached (``subject -> tuple of PatternStats``, at most WatchedSubjects.CacheSize
subjects; the cache is emptied when full and whenever the patterns change), so a second's work
is one dict lookup per active subject plus one add per (subject, matching pattern), whatever the
number of patterns.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol

from pushgrid.metrics.watched import PatternStats
from pushgrid.protocol.exceptions import MonitoringError
from pushgrid.protocol.subjects import pattern_error, pattern_matches

from .accounting import DeliveryAccounts

log = logging.getLogger(__name__)

#: time a second's reading may spend reading the patterns' rolling windows (round-robin)
WINDOW_BUDGET: Final = 0.005


class WatchError(MonitoringError, ValueError):
    """A pattern refused: ``kind`` is ``invalid``, ``duplicate``, ``cap`` or ``unknown``."""

    code = "watch"

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class PatternTallySource(Protocol):
    """What the watchlist reads from the hub."""

    def take_tally(self) -> dict[str, list[int]]: ...

    def subscriber_counts(self) -> Iterable[tuple[str, int]]: ...


class SecondsArchive(Protocol):
    """Where each completed second of every pattern goes (metrics.archive.ArchiveWriter with
    the ``watched`` prefix: one line per pattern and second, ADR 030)."""

    def write_lines(
        self, ts: int, lines: Sequence[tuple[Sequence[str], Mapping[str, float]]]
    ) -> None: ...


class Watchlist:
    def __init__(
        self,
        cap: int = 100,
        cache_size: int = 100_000,
        clock: Callable[[], float] = time.time,
        window_budget: float = WINDOW_BUDGET,
    ) -> None:
        self.cap = cap
        self.cache_size = cache_size
        self.clock = clock
        self.window_budget = window_budget
        self.patterns: dict[str, PatternStats] = {}
        self._cache: dict[str, tuple[PatternStats, ...]] = {}
        self._active: set[str] = set()  # subjects with traffic since the last reading
        self._next_window = 0  # round-robin position of the window refresh
        self.cache_misses = 0
        self.archive: SecondsArchive | None = None  # set by the server when MetricsArchive is
        self.archive_errors = 0

    # -- the patterns -------------------------------------------------------------------------

    def add(self, pattern: str, source: str = "runtime") -> PatternStats:
        """Start watching ``pattern``; :class:`WatchError` when invalid, present or over the cap."""
        reason = pattern_error(pattern)
        if reason is not None:
            raise WatchError("invalid", f"invalid pattern {pattern!r}: {reason}")
        if pattern in self.patterns:
            raise WatchError("duplicate", f"{pattern!r} is already watched")
        if len(self.patterns) >= self.cap:
            raise WatchError(
                "cap",
                f"{len(self.patterns)} patterns are watched, the most WatchedSubjects.MaxPatterns"
                f" ({self.cap}) allows: remove one first",
            )
        stats = self.patterns[pattern] = PatternStats(pattern, source, self.clock())
        self._cache.clear()
        return stats

    def remove(self, pattern: str) -> None:
        if self.patterns.pop(pattern, None) is None:
            raise WatchError("unknown", f"{pattern!r} is not watched")
        self._cache.clear()

    def matching(self, subject: str) -> tuple[PatternStats, ...]:
        """The patterns ``subject`` counts for (cached)."""
        found = self._cache.get(subject)
        if found is None:
            self.cache_misses += 1
            found = tuple(p for p in self.patterns.values() if pattern_matches(p.pattern, subject))
            if len(self._cache) >= self.cache_size:
                self._cache.clear()  # bounded: a burst of new subjects starts it afresh
            self._cache[subject] = found
        return found

    @property
    def cached_subjects(self) -> int:
        return len(self._cache)

    # -- once a second ------------------------------------------------------------------------

    def absorb(self, tally: dict[str, list[int]]) -> None:
        """Add the hub's per-subject deltas to the patterns that match."""
        if not self.patterns:
            return
        active = self._active
        for subject, counts in tally.items():
            found = self.matching(subject)
            if found:
                active.add(subject)
                for stats in found:
                    stats.add(counts)

    def read(self, wall: float, tick: float, subscriptions: Iterable[tuple[str, int]]) -> None:
        """The sampler's reading: gauges from the hub's subscription tables, one reading per
        pattern, and the rolling windows of the next patterns in turn."""
        if not self.patterns:
            self._active.clear()
            return
        subscribers: dict[PatternStats, int] = dict.fromkeys(self.patterns.values(), 0)
        subjects: dict[PatternStats, set[str]] = {p: set() for p in self.patterns.values()}
        for subject, count in subscriptions:
            for stats in self.matching(subject):
                subscribers[stats] += count
                subjects[stats].add(subject)
        for subject in self._active:
            for stats in self.matching(subject):
                subjects[stats].add(subject)
        self._active = set()
        seconds: dict[int, list[tuple[Sequence[str], Mapping[str, float]]]] = {}
        for stats in self.patterns.values():
            for ts, values in stats.read(wall, tick, subscribers[stats], len(subjects[stats])):
                seconds.setdefault(ts, []).append(((stats.pattern,), values))
        self._archive(seconds)
        self._refresh_windows()

    def _archive(self, seconds: dict[int, list[tuple[Sequence[str], Mapping[str, float]]]]) -> None:
        """The completed seconds, oldest first: a pattern added now appears from its first
        whole second, a removed one has no line after its last."""
        if self.archive is None:
            return
        for ts in sorted(seconds):
            try:
                self.archive.write_lines(ts, seconds[ts])
            except OSError as exc:
                self.archive_errors += 1
                log.warning("watched archive write failed: %s", exc)

    def _refresh_windows(self) -> None:
        """Read windows round-robin until the budget is spent (at least one pattern a second)."""
        ordered = list(self.patterns.values())
        deadline = time.perf_counter() + self.window_budget
        for step in range(len(ordered)):
            if step > 0 and time.perf_counter() >= deadline:
                break
            ordered[(self._next_window + step) % len(ordered)].refresh_windows()
            self._next_window = (self._next_window + step + 1) % len(ordered)

    def document(self) -> dict[str, Any]:
        return {
            "max_patterns": self.cap,
            "cache_size": self.cache_size,
            "cached_subjects": len(self._cache),
            "patterns": [stats.document() for stats in self.patterns.values()],
        }


class WatchFeed:
    """Hands the hub's per-subject deltas to the watchlist on their way to the hot subjects.

    The hot subjects (metrics/hotsubjects.py) take the hub's tally through :meth:`take_tally`;
    :meth:`drain` takes what is left (all of it when the hot subjects are off) after them.
    """

    def __init__(
        self,
        hub: PatternTallySource,
        watchlist: Watchlist,
        accounts: DeliveryAccounts | None = None,
    ) -> None:
        self.hub = hub
        self.watchlist = watchlist
        self.accounts = accounts  # delivery accounting sees every tally too (ADR 054)
        # (subject, subscribers): the hub's; worker 0 of several reads the server's (ADR 060)
        self.counts: Callable[[], Iterable[tuple[str, int]]] = hub.subscriber_counts

    def take_tally(self) -> dict[str, list[int]]:
        tally = self.hub.take_tally()
        self.watchlist.absorb(tally)
        if self.accounts is not None:
            self.accounts.absorb(tally)
        return tally

    def subscriber_counts(self) -> Iterable[tuple[str, int]]:
        return self.counts()

    def drain(self) -> None:
        self.take_tally()

    def read(self, wall: float, tick: float) -> None:
        """The sampler's reading: the deltas left, then the patterns' reading."""
        self.drain()
        self.watchlist.read(wall, tick, self.counts())
