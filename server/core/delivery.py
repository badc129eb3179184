"""Delivery truth on one member: the clients' reports and the server's own legs (ADR 048).

Clients report, every few seconds, the latency histogram of the live updates they got (receipt
minus the message's ``ingress`` time, on the server's clock) and their loss counters
(docs/protocol.md 5.7). :class:`DeliveryBook` adds each report to

* the member's totals (cumulative since start: Prometheus histograms and counters),
* the patterns of the WatchedSubjects list that match each subject of the report,
* the reporting session's own summary (:class:`SessionDelivery`, on ``Session.delivery``),
* a ring of one-second histograms (:data:`WINDOW_SECONDS`), from which the recent percentiles
  are read (MBean, /stats, the admin API, which merges the members' buckets cluster-wide).

The server measures its own legs on the same buckets: ``publish_ack`` (ingress to the
engine's acknowledgement, on the ingress member), ``engine`` (ingress to this member's hub
receiving the message from the engine: replication and the engine's ordering) and ``fanout``
(the hub's work for one message: encoding it once and queueing it to every subscriber). The
flush delay (queued to written) is the flusher's own histogram (metrics/delays.py).

Cost: a report costs one addition per non-empty bucket per level; a message costs two clock
reads and two bisects in the hub (measured in docs/benchmarks.md).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pushgrid.protocol.frames import DeliveryReport
from pushgrid.protocol.latency import LEGS, LOSS_KINDS, PERCENTILES, LatencyHistogram

#: seconds of one-second histograms kept for the recent percentiles
WINDOW_SECONDS = 60


@dataclass(slots=True)
class DeliveryTally:
    """A latency histogram and the loss counters of one scope (member, pattern, session)."""

    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    loss: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LOSS_KINDS, 0))

    def add_entry(self, pairs: Iterable[tuple[int, int]], counts: Iterable[int]) -> None:
        self.latency.add_pairs(pairs)
        for kind, n in zip(LOSS_KINDS, counts, strict=True):
            self.loss[kind] += n

    def merge(self, other: DeliveryTally) -> None:
        self.latency.merge(other.latency)
        for kind, n in other.loss.items():
            self.loss[kind] += n

    @property
    def lost(self) -> int:
        """What a client saw as loss: gaps it could not recover, and failed recoveries."""
        return self.loss["recovery_failed"] + self.loss["resyncs"]


@dataclass(slots=True)
class SessionDelivery:
    """One session's delivery summary (the clients page reads it from the session)."""

    totals: DeliveryTally = field(default_factory=DeliveryTally)
    reports: int = 0
    last_report: float = 0.0  # wall time of the last report, 0: none yet
    offset_us: int = 0  # the client's clock offset to this server (server - client)
    rtt_us: int = 0  # the round trip of the ping the offset came from

    def summary(self) -> dict[str, object]:
        """What a session view shows: latency count and percentiles (seconds, since the
        session began), loss counters, reports, the last one's time and the clock offset."""
        latency = self.totals.latency
        return {
            "latency_count": latency.count,
            **{f"latency_{name}": latency.quantile(q) for name, q in PERCENTILES},
            "loss": dict(self.totals.loss),
            "reports": self.reports,
            "last_report": self.last_report or None,
            "clock_offset_us": self.offset_us,
            "rtt_us": self.rtt_us,
        }


@dataclass(slots=True)
class DeliverySecond:
    """One second's reports and legs (the ring's entries, the archive's lines)."""

    second: int
    member: DeliveryTally = field(default_factory=DeliveryTally)
    patterns: dict[str, DeliveryTally] = field(default_factory=dict)
    legs: dict[str, LatencyHistogram] = field(
        default_factory=lambda: {leg: LatencyHistogram() for leg in LEGS}
    )


def _merge_second(into: DeliverySecond, other: DeliverySecond) -> None:
    into.member.merge(other.member)
    for pattern, tally in other.patterns.items():
        into.patterns.setdefault(pattern, DeliveryTally()).merge(tally)
    for leg, histogram in other.legs.items():
        into.legs[leg].merge(histogram)


def _entry_counts(entry: object) -> tuple[int, ...]:
    return tuple(getattr(entry, kind) for kind in LOSS_KINDS)


class DeliveryBook:
    """Every report and leg measurement of this member (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.totals = DeliveryTally()
        self.pattern_totals: dict[str, DeliveryTally] = {}
        self.legs = {leg: LatencyHistogram() for leg in LEGS}
        self.reports = 0
        self.rejected_reports = 0
        self._ring: deque[DeliverySecond] = deque(maxlen=WINDOW_SECONDS)
        self._archived = 0  # the last second handed to the archive
        #: which watched patterns a subject counts for (server/core/watch.py), set by the app
        self.patterns: Callable[[str], Iterable[str]] = lambda subject: ()

    def _now(self) -> DeliverySecond:
        second = int(self._clock())
        ring = self._ring
        if not ring or ring[-1].second != second:
            ring.append(DeliverySecond(second))
        return ring[-1]

    def add_report(self, report: DeliveryReport, session: SessionDelivery) -> None:
        """A checked report (codec.py refused a broken one whole)."""
        now = self._now()
        self.reports += 1
        session.reports += 1
        session.last_report = self._clock()
        session.offset_us, session.rtt_us = report.offset, report.rtt
        for entry in report.entries:
            counts = _entry_counts(entry)
            targets = [self.totals, now.member, session.totals]
            if entry.subject is not None:
                for pattern in self.patterns(entry.subject):
                    targets.append(self.pattern_totals.setdefault(pattern, DeliveryTally()))
                    targets.append(now.patterns.setdefault(pattern, DeliveryTally()))
            for tally in targets:
                tally.add_entry(entry.latency, counts)

    def absorb(self, second: DeliverySecond) -> None:
        """Another worker process's completed second (Workers > 1, server/workers/
        delivery_share.py): into the totals and the ring, merged with this one's same second."""
        self.totals.merge(second.member)
        for pattern, tally in second.patterns.items():
            self.pattern_totals.setdefault(pattern, DeliveryTally()).merge(tally)
        for leg, histogram in second.legs.items():
            self.legs[leg].merge(histogram)
        ring = self._ring
        for mine in ring:
            if mine.second == second.second:
                _merge_second(mine, second)
                return
        if len(ring) == ring.maxlen and ring[0].second > second.second:
            return  # older than the window
        seconds = sorted([*ring, second], key=lambda s: s.second)
        ring.clear()
        ring.extend(seconds)

    def keep_patterns(self, watched: set[str]) -> None:
        """Forget the totals of patterns no longer watched (bounded by MaxPatterns)."""
        for pattern in [p for p in self.pattern_totals if p not in watched]:
            del self.pattern_totals[pattern]

    def leg(self, leg: str, micros: float) -> None:
        """One measurement of a server leg (see :data:`LEGS`)."""
        self.legs[leg].observe(micros)
        self._now().legs[leg].observe(micros)

    def completed(self, settle: int = 0) -> list[DeliverySecond]:
        """The seconds that ended since the last call (each once, oldest first): the archive's;
        ``settle``: only those that ended at least that many seconds ago (the other workers'
        share of a second arrives up to a report period later, ADR 056)."""
        now = int(self._clock()) - settle
        done = [s for s in self._ring if self._archived < s.second < now]
        if done:
            self._archived = done[-1].second
        return done

    def recent(self, seconds: int = WINDOW_SECONDS) -> RecentDelivery:
        """The last ``seconds`` merged: the member, each pattern, each leg."""
        since = int(self._clock()) - seconds
        member = DeliveryTally()
        patterns: dict[str, DeliveryTally] = {}
        legs = {leg: LatencyHistogram() for leg in LEGS}
        for second in self._ring:
            if second.second <= since:
                continue
            member.merge(second.member)
            for pattern, tally in second.patterns.items():
                patterns.setdefault(pattern, DeliveryTally()).merge(tally)
            for leg, histogram in second.legs.items():
                legs[leg].merge(histogram)
        return RecentDelivery(seconds, member, patterns, legs)


@dataclass(frozen=True, slots=True)
class RecentDelivery:
    seconds: int
    member: DeliveryTally
    patterns: dict[str, DeliveryTally]
    legs: dict[str, LatencyHistogram]
