"""Who is subscribed where, cluster-wide: the occupancy table and its transitions. Pure.

Every member reports its own subscriber count per subject; the table keeps the last count each
member reported, and a subject's cluster count is their sum. A subject is *occupied* while its
cluster count is above zero. Every change of a member's counts returns the subjects whose
cluster count crossed zero, as :class:`Transition` values (``occupied`` when it rose from zero,
``vacated`` when it fell to zero), so the events follow from the counts and never disagree with
them: for one subject they alternate, starting with ``occupied``.

A member's report is either a *delta* (only the subjects whose count changed; 0 removes one) or
*full* (its whole state: a subject it does not list has no subscriber there). A member that
leaves (it ended, or stopped sending heartbeats) is :meth:`OccupancyTable.drop`-ped, which
vacates every subject only it occupied.

Memory: one dict entry per (member, subscribed subject) plus one per occupied subject.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

OccupancyEvent = Literal["occupied", "vacated"]


@dataclass(frozen=True, slots=True)
class Transition:
    """A subject's cluster count crossed zero."""

    subject: str
    event: OccupancyEvent
    subscribers: int  # the cluster count after the change


class OccupancyTable:
    def __init__(self, fold: Callable[[str], str] = str) -> None:
        self._by_member: dict[str, dict[str, int]] = {}
        #: the name an operator sees for a member (a worker's is its server's: ADR 060)
        self.fold = fold
        self._totals: dict[str, int] = {}  # occupied subjects only

    # -- changes ----------------------------------------------------------------------------

    def apply(self, member: str, counts: Mapping[str, int]) -> list[Transition]:
        """A delta from ``member``: these subjects now have these counts there (0: none)."""
        held = self._by_member.setdefault(member, {})
        changed: list[Transition] = []
        for subject, count in counts.items():
            if count < 0:
                raise ValueError(f"{subject!r}: a subscriber count cannot be negative ({count})")
            before = held.pop(subject, 0)
            if count:
                held[subject] = count
            transition = self._move(subject, count - before)
            if transition is not None:
                changed.append(transition)
        if not held:
            del self._by_member[member]
        return changed

    def replace(self, member: str, counts: Mapping[str, int]) -> list[Transition]:
        """``member``'s whole state: the subjects it does not list have no subscriber there."""
        gone = {subject: 0 for subject in self._by_member.get(member, {}) if subject not in counts}
        return self.apply(member, {**gone, **counts})

    def drop(self, member: str) -> list[Transition]:
        """``member`` left the cluster: its subscribers are gone."""
        return self.apply(member, dict.fromkeys(self._by_member.get(member, {}), 0))

    def _move(self, subject: str, delta: int) -> Transition | None:
        if delta == 0:
            return None
        before = self._totals.get(subject, 0)
        after = before + delta
        if after:
            self._totals[subject] = after
        else:
            del self._totals[subject]
        if before == 0:
            return Transition(subject, "occupied", after)
        if after == 0:
            return Transition(subject, "vacated", 0)
        return None

    # -- reads ------------------------------------------------------------------------------

    def subscribers(self, subject: str) -> int:
        """The cluster count of ``subject``."""
        return self._totals.get(subject, 0)

    def counts(self) -> Iterable[tuple[str, int]]:
        """(subject, cluster count) of every occupied subject."""
        return self._totals.items()

    def count_on(self, member: str, subject: str) -> int:
        """``subject``'s count on ``member`` (0: none there)."""
        return self._by_member.get(member, {}).get(subject, 0)

    def by_member(self, subject: str) -> dict[str, int]:
        """``subject``'s count on each member that has a subscriber (the workers of one server
        summed under its name: ``fold``)."""
        counts: dict[str, int] = {}
        for member, held in self._by_member.items():
            if subject in held:
                name = self.fold(member)
                counts[name] = counts.get(name, 0) + held[subject]
        return counts

    def members(self) -> Iterable[str]:
        """The members that hold at least one subscriber."""
        return self._by_member.keys()

    def counts_of(self, member: str) -> dict[str, int]:
        """A copy of ``member``'s counts (its full report)."""
        return dict(self._by_member.get(member, {}))

    def occupied(self) -> int:
        """How many subjects have a subscriber somewhere in the cluster."""
        return len(self._totals)
