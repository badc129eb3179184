"""Delivery accounting: what became of every delivery a subject's subscribers were due (ADR 054).

When a message reaches the hub, each user subscription of its subject at that moment is owed one
delivery (*due*). Every due delivery ends in exactly one of these outcomes, each counted where
it happens (never derived from the others):

- ``written``: a live frame carrying it was handed to the socket (``transport.write``, at the
  connection's flush; a conflated message counts once, for the last message it carries);
- ``conflated``: a conflated subscription's period held a later message (it replaced this one);
- ``dropped``: the subscriber is a slow consumer: the frame was queued when the connection was
  closed with 4001 (the queue is discarded), or arrived after that close;
- ``closed``: the connection was closing for another reason (client gone, token expired, server
  stopping), or the subscription ended before its conflated message left;
- ``covered``: it arrived while the subscription was opening and the snapshot or recovery sent
  to open it already held it (a guaranteed update at or below the opening position).

On a settled system (nothing in flight) ``due == written + conflated + dropped + closed +
covered`` exactly, per subject and per watched pattern; the difference is what is still in
flight (queued for a flush, waiting for a conflation period) or a bug. Two more columns inform
without being outcomes: ``deltas`` (written deliveries sent as field deltas, leaving unchanged
fields out) and ``refused`` (publishes refused by entitlement: never published, never due).

Cost: the counters live in the hub's per-subject tally (one list per subject and second, already
looked up once per message), so a fan-out adds integer increments per message, not per
subscriber; the connection counts its queued live deliveries (one small-int increment each, the
subject compared with the last one's) and adds the count to the tally at its flush (ADR 058).
Once a second :class:`DeliveryAccounts` folds the tally into totals, per subject and per
watched pattern.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

# The hub's tally is ``[messages in, messages out, bytes out, bytes in]`` (hot and watched
# subjects read those four); the accounting columns follow them.
PUBLISHED: Final = 0  # messages accepted on this member (the tally's "messages in")
DUE: Final = 4
WRITTEN: Final = 5
CONFLATED: Final = 6
DELTAS: Final = 7
DROPPED: Final = 8
CLOSED: Final = 9
COVERED: Final = 10
REFUSED: Final = 11
TALLY_SIZE: Final = 12

#: the columns of an account, in the order every view shows them (pushgrid/ops/accounting.py
#: names the same; core may not import the ops contract, tests/unit/test_accounting.py pins it)
COLUMNS: Final = (
    "published",
    "due",
    "written",
    "conflated",
    "deltas",
    "dropped",
    "closed",
    "covered",
    "refused",
)
_INDEXES: Final = (PUBLISHED, DUE, WRITTEN, CONFLATED, DELTAS, DROPPED, CLOSED, COVERED, REFUSED)

#: subjects an accounts object follows one by one (the totals and patterns always count all)
DEFAULT_SUBJECT_CAP: Final = 10_000


def new_tally() -> list[int]:
    return [0] * TALLY_SIZE


def columns_of(counts: list[int]) -> list[int]:
    """A tally entry's accounting columns, in :data:`COLUMNS` order."""
    return [counts[i] for i in _INDEXES]


@dataclass(slots=True)
class Account:
    """Cumulative columns of one subject or pattern, and the last second's deltas."""

    total: list[int] = field(default_factory=lambda: [0] * len(COLUMNS))
    second: list[int] = field(default_factory=lambda: [0] * len(COLUMNS))
    _pending: list[int] = field(default_factory=lambda: [0] * len(COLUMNS))

    def add(self, columns: list[int]) -> None:
        total, pending = self.total, self._pending
        for i, n in enumerate(columns):
            total[i] += n
            pending[i] += n

    def close_second(self) -> None:
        self.second, self._pending = self._pending, [0] * len(COLUMNS)

    def row(self) -> dict[str, int]:
        return dict(zip(COLUMNS, self.total, strict=True))

    def rate(self) -> dict[str, int]:
        return dict(zip(COLUMNS, self.second, strict=True))


class DeliveryAccounts:
    """Every tally the hub hands over, folded into totals, subjects and watched patterns.

    ``patterns_of(subject)`` names the watched patterns a subject counts for (the watchlist's
    cached matching). A subject is followed one by one once something besides a publish happened
    to it (a delivery due, a refusal): publishes of subjects nobody follows (a flood of one-shot
    subjects) count in the totals and patterns only, and cost no memory here. At most
    ``subject_cap`` subjects are followed: past it the eighth with the fewest due deliveries is
    forgotten in one pass (its counts stay in the totals and patterns), so a stream of new
    subjects costs O(log n) each, not a scan of every subject each. Each second only the
    subjects active in it or in the second before are closed.
    """

    def __init__(
        self,
        patterns_of: Callable[[str], Iterable[str]] = lambda _subject: (),
        subject_cap: int = DEFAULT_SUBJECT_CAP,
    ) -> None:
        self.patterns_of = patterns_of
        self.subject_cap = subject_cap
        self.totals = Account()
        self.subjects: dict[str, Account] = {}
        self.patterns: dict[str, Account] = {}
        self.forgotten = 0  # subjects forgotten for the cap
        self._touched: set[str] = set()  # subjects counted in this second
        self._recent: set[str] = set()  # subjects counted in the second before (rates to clear)

    def absorb(self, tally: dict[str, list[int]]) -> None:
        """Add one tally (the hub's per-subject deltas) to every account it touches."""
        for subject, counts in tally.items():
            columns = columns_of(counts)
            if not any(columns):
                continue
            self.totals.add(columns)
            if subject in self.subjects or any(columns[1:]):  # columns[0]: published
                self._subject(subject).add(columns)
                self._touched.add(subject)
            for pattern in self.patterns_of(subject):
                account = self.patterns.get(pattern)
                if account is None:
                    account = self.patterns[pattern] = Account()
                account.add(columns)

    def _subject(self, subject: str) -> Account:
        account = self.subjects.get(subject)
        if account is None:
            if len(self.subjects) >= self.subject_cap:
                self._forget(max(1, self.subject_cap // 8))
            account = self.subjects[subject] = Account()
        return account

    def _forget(self, count: int) -> None:
        """Forget the ``count`` subjects with the fewest deliveries due (ties: by name)."""
        subjects = self.subjects
        least = heapq.nsmallest(count, subjects, key=lambda s: (subjects[s].total[1], s))
        for subject in least:
            del subjects[subject]
            self._touched.discard(subject)
            self._recent.discard(subject)
        self.forgotten += len(least)

    def close_second(self, watched: Iterable[str]) -> None:
        """The sampler's reading: the second's deltas become the rates; patterns no longer
        watched are dropped (a pattern watched again starts from zero)."""
        keep = set(watched)
        for pattern in [p for p in self.patterns if p not in keep]:
            del self.patterns[pattern]
        for pattern in keep:
            self.patterns.setdefault(pattern, Account())
        self.totals.close_second()
        for account in self.patterns.values():
            account.close_second()
        # a subject idle for two seconds has nothing pending and a second of zeros already
        for subject in self._touched | self._recent:
            self.subjects[subject].close_second()
        self._recent, self._touched = self._touched, set()

    def top(self, n: int) -> list[tuple[str, Account]]:
        """The ``n`` subjects with the most deliveries due since start (ties by name)."""
        return heapq.nsmallest(n, self.subjects.items(), key=lambda i: (-i[1].total[1], i[0]))
