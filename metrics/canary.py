"""Canaries: which member's canaries reach which member, and how late (pure; issue 33 item 3).

Every member publishes a canary once a second (``CANARY_INTERVAL``) through the engine's publish
path and follows every member's canaries through its own delivery path (server/canary.py). A
member keeps one :class:`CanaryRow`: per publisher, when the last canary arrived and how late it
was. The admin API joins the rows of every member into the member-by-member matrix.

Rules (docs/monitoring.md, "Canaries"):

* a pair *publisher -> receiver* is **stale** when no canary of that publisher has reached the
  receiver for ``STALE_AFTER`` seconds; a publisher the receiver never heard from counts from the
  moment the receiver started expecting it (:meth:`CanaryRow.expect`: when it started following,
  or first saw the publisher up), so a member that just started is not stale at once;
* the receiver's delivery is **stalled** (health reason ``delivery_stalled``, "degraded:
  delivery") for every stale pair whose publisher is *alive*: up, and heard (its heartbeat)
  ``HEARD_AFTER`` seconds or more after its last canary arrived, so it would have published
  another. A publisher that died is silent on both paths: its last heartbeat comes within a
  heartbeat of its last canary, so its pair never stalls; it is ``member_down`` once the
  membership says so (``DOWN_AFTER`` 3.5 s, later than ``STALE_AFTER``), and its silence says
  nothing about the receiver's delivery path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

CANARY_INTERVAL: Final = 1.0  # seconds between two canaries of a member
#: without a canary for this long a pair is stale: three missed canaries (one late canary on a
#: loaded machine does not flap the health), and well inside the 5 s the issue allows
STALE_AFTER: Final = 3.0
#: a publisher heard this long after its last canary arrived is alive and publishing: one and a
#: half canary intervals (a dead member's last heartbeat and last canary are at most about one
#: interval apart; a canary's own delivery latency only narrows that gap)
HEARD_AFTER: Final = 1.5 * CANARY_INTERVAL


@dataclass(frozen=True, slots=True)
class CanaryPair:
    """One cell of the matrix: ``publisher``'s canaries as ``receiver`` gets them.

    ``age``: seconds since the last one arrived (None: none yet); ``latency``: seconds from its
    publisher's clock at publishing to the receiver's at arrival (None: none yet); ``received``:
    canaries of that publisher received since the receiver started."""

    publisher: str
    receiver: str
    age: float | None
    latency: float | None
    received: int
    stale: bool


@dataclass(slots=True)
class _Cell:
    since: float  # expected since (Unix seconds)
    last: float = 0.0  # arrival of the last canary (0.0: none yet)
    latency: float | None = None
    received: int = 0


@dataclass(slots=True)
class CanaryRow:
    """What one receiving member knows: every publisher's last canary to it."""

    receiver: str
    cells: dict[str, _Cell] = field(default_factory=dict)

    def expect(self, publisher: str, now: float) -> None:
        """Start counting ``publisher``'s silence from ``now`` (no effect once known)."""
        if publisher not in self.cells:
            self.cells[publisher] = _Cell(since=now)

    def record(self, publisher: str, sent: float, arrived: float) -> None:
        """A canary of ``publisher`` published at ``sent`` (its clock) arrived at ``arrived``."""
        cell = self.cells.get(publisher)
        if cell is None:
            cell = self.cells[publisher] = _Cell(since=arrived)
        cell.last = arrived
        cell.latency = max(0.0, arrived - sent)  # clocks of two hosts: never negative
        cell.received += 1

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the publishers not in ``keep`` (members removed from the cluster)."""
        kept = set(keep)
        for publisher in [p for p in self.cells if p not in kept]:
            del self.cells[publisher]

    def pairs(self, now: float) -> list[CanaryPair]:
        """Every publisher's pair to this receiver, by publisher name."""
        return [self._pair(publisher, now) for publisher in sorted(self.cells)]

    def _pair(self, publisher: str, now: float) -> CanaryPair:
        cell = self.cells[publisher]
        age = None if cell.last == 0.0 else max(0.0, now - cell.last)
        silent_for = now - (cell.last or cell.since)
        return CanaryPair(
            publisher,
            self.receiver,
            None if age is None else round(age, 3),
            None if cell.latency is None else round(cell.latency, 6),
            cell.received,
            stale=silent_for > STALE_AFTER,
        )

    def stalled(self, now: float, heard: Mapping[str, float]) -> list[str]:
        """The alive publishers whose canaries no longer reach this receiver; ``heard``: every
        member up, with the seconds since it was last heard (0.0 for this member itself)."""
        out = []
        for pair in self.pairs(now):
            since_heard = heard.get(pair.publisher)
            if not pair.stale or since_heard is None:
                continue
            cell = self.cells[pair.publisher]
            silent_for = now - (cell.last or cell.since)
            if silent_for - since_heard >= HEARD_AFTER:
                out.append(pair.publisher)
        return out


def pair_name(publisher: str, receiver: str) -> str:
    """How a pair is named in health reasons, alerts and labels: ``publisher->receiver``."""
    return f"{publisher}->{receiver}"


@dataclass(frozen=True, slots=True)
class CanaryState:
    """What a member's canary service shows (every view formats it): its own publishing and
    the pairs of every publisher to it."""

    member: str
    enabled: bool
    published: int  # canaries this member published (accepted by the engine)
    publish_failures: int  # refused or failed publishes of them
    pairs: tuple[CanaryPair, ...]

    @property
    def stale_pairs(self) -> int:
        return sum(1 for pair in self.pairs if pair.stale)
