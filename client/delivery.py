"""What the client measures of its deliveries, and its reports. Pure, no I/O (ADR 048).

* :class:`ClockOffset`: the client's clock offset to the server, NTP-style, from ping/pong
  exchanges. The client stamps t0 when it sends a ``ping``, the server stamps its time (t1 = t2:
  it answers at once) in the ``pong``, the client stamps t3 on receipt: round trip
  ``rtt = t3 - t0``, offset ``server - client = t1 - (t0 + t3) / 2``. Of the last
  :data:`OFFSET_SAMPLES` exchanges the one with the smallest round trip is kept: its error is at
  most half its round trip (the path's asymmetry), and queueing delays only ever lengthen a
  round trip.
* :class:`DeliveryReporter`: per subject, the latency histogram of live updates (receipt minus
  the message's ``ingress``, both on the server's clock) and the loss counters, folded into one
  ``report`` frame every report period; bounded: at most ``MAX_REPORT_SUBJECTS`` subjects per
  period, the rest counted in the entry without a subject.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from pushgrid.protocol.frames import MAX_REPORT_SUBJECTS, DeliveryReport, ReportEntry
from pushgrid.protocol.latency import MAX_COUNT, LatencyHistogram

#: exchanges the offset estimate chooses from (the newest ones)
OFFSET_SAMPLES = 8


@dataclass(frozen=True, slots=True)
class OffsetSample:
    rtt: float  # microseconds
    offset: float  # server clock - client clock, microseconds


class ClockOffset:
    """The minimum-round-trip offset estimate over the last :data:`OFFSET_SAMPLES` pings."""

    def __init__(self, samples: int = OFFSET_SAMPLES) -> None:
        self._samples: deque[OffsetSample] = deque(maxlen=samples)
        self.best: OffsetSample | None = None

    def add(self, t0: float, server: float, t3: float) -> OffsetSample | None:
        """One exchange (client send, server stamp, client receipt; microseconds). A round
        trip below zero (the client's clock stepped back) is ignored."""
        rtt = t3 - t0
        if rtt < 0:
            return None
        sample = OffsetSample(rtt, server - (t0 + t3) / 2)
        self._samples.append(sample)
        self.best = min(self._samples, key=lambda s: s.rtt)
        return sample

    def clear(self) -> None:
        """A new connection (maybe another server, another clock): start over."""
        self._samples.clear()
        self.best = None

    @property
    def offset(self) -> float | None:
        return self.best.offset if self.best is not None else None


@dataclass(slots=True)
class _Seen:
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    gaps: int = 0
    duplicates: int = 0
    resyncs: int = 0
    recovered: int = 0
    recovery_failed: int = 0

    def entry(self, subject: str | None) -> ReportEntry:
        return ReportEntry(
            subject,
            [(i, min(n, MAX_COUNT)) for i, n in self.latency.pairs()],
            *(min(n, MAX_COUNT) for n in self.counters()),
        )

    def counters(self) -> tuple[int, int, int, int, int]:
        return (self.gaps, self.duplicates, self.resyncs, self.recovered, self.recovery_failed)

    def empty(self) -> bool:
        return self.latency.count == 0 and not any(self.counters())


class DeliveryReporter:
    """One report period's measurements; :meth:`report` hands them over and starts the next."""

    def __init__(self, max_subjects: int = MAX_REPORT_SUBJECTS) -> None:
        self._max_subjects = max_subjects
        self._subjects: dict[str, _Seen] = {}
        self._other = _Seen()
        self.clock = ClockOffset()
        self.latencies = 0  # every latency measured since the client started

    def _seen(self, subject: str) -> _Seen:
        seen = self._subjects.get(subject)
        if seen is None:
            if len(self._subjects) >= self._max_subjects:
                return self._other
            seen = self._subjects[subject] = _Seen()
        return seen

    def latency(self, subject: str, ingress: int, received: float) -> float | None:
        """A live update of ``subject`` that reached the server at ``ingress`` (server clock,
        us) arrived at ``received`` (client clock, us): its latency in microseconds, counted,
        or None while no offset is known (nothing is counted then)."""
        offset = self.clock.offset
        if offset is None or ingress <= 0:
            return None
        micros = received + offset - ingress
        self._seen(subject).latency.observe(micros)
        self.latencies += 1
        return micros

    def count(self, subject: str, kind: str) -> None:
        """One loss event of ``kind`` (one of :data:`LOSS_KINDS`) on ``subject``."""
        seen = self._seen(subject)
        setattr(seen, kind, getattr(seen, kind) + 1)

    def report(self, interval: float) -> DeliveryReport | None:
        """The period's ``report`` frame (None when nothing was seen); the period restarts."""
        entries = [seen.entry(s) for s, seen in self._subjects.items() if not seen.empty()]
        if not self._other.empty():
            entries.append(self._other.entry(None))
        self._subjects = {}
        self._other = _Seen()
        if not entries:
            return None
        best = self.clock.best
        return DeliveryReport(
            entries=entries,
            interval=max(interval, 0.001),
            offset=round(best.offset) if best is not None else 0,
            rtt=round(best.rtt) if best is not None else 0,
        )
