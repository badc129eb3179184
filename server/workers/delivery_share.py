"""The clients' delivery reports of every worker in worker 0's views (ADR 048, ADR 056).

A client reports its delivery latency and loss to the worker that holds its connection. The
Delivery MBean, /stats, /metrics and the archive are worker 0's: so each other worker sends its
completed seconds (``DeliveryBook.completed``: each once) with its report to worker 0 once a
second (``WorkerReport.delivery``), and the number of reports accepted and refused since its last
report. Worker 0 merges them into its own book (``DeliveryBook.absorb``): the same second of
two workers is one second of the server, archived ``ARCHIVE_SETTLE`` seconds after it ended so
the others' share is in it. A report lost while the link is down is not resent.
"""

from __future__ import annotations

import msgspec

from pushgrid.protocol.latency import LatencyHistogram

from ..core.delivery import DeliveryBook, DeliverySecond, DeliveryTally

Pairs = list[tuple[int, int]]

#: seconds worker 0 waits after a second ended before archiving it: the others' share of it
#: comes with their next report (one a second)
ARCHIVE_SETTLE = 3


class TallyShare(msgspec.Struct, array_like=True):
    latency: Pairs
    loss: dict[str, int]


class DeliveryShare(msgspec.Struct, array_like=True):
    """One completed second of one worker's delivery book."""

    second: int
    member: TallyShare
    patterns: dict[str, TallyShare]
    legs: dict[str, Pairs]


class DeliveryShipment(msgspec.Struct, array_like=True):
    """What a worker's report carries of its delivery book since its last report."""

    seconds: list[DeliveryShare]
    reports: int
    rejected: int


def _tally_share(tally: DeliveryTally) -> TallyShare:
    return TallyShare(tally.latency.pairs(), dict(tally.loss))


def _tally(share: TallyShare) -> DeliveryTally:
    tally = DeliveryTally()
    tally.latency.add_pairs(share.latency)
    for kind, n in share.loss.items():
        if kind in tally.loss:  # a kind this version knows
            tally.loss[kind] += n
    return tally


def _histogram(pairs: Pairs) -> LatencyHistogram:
    histogram = LatencyHistogram()
    histogram.add_pairs(pairs)
    return histogram


class DeliveryShipper:
    """A worker's side: what it has not yet sent worker 0."""

    def __init__(self, book: DeliveryBook) -> None:
        self.book = book
        self._reports = 0
        self._rejected = 0

    def shipment(self) -> DeliveryShipment:
        book = self.book
        seconds = [
            DeliveryShare(
                second.second,
                _tally_share(second.member),
                {p: _tally_share(t) for p, t in second.patterns.items()},
                {leg: h.pairs() for leg, h in second.legs.items() if h.count},
            )
            for second in book.completed()
        ]
        reports, rejected = book.reports - self._reports, book.rejected_reports - self._rejected
        self._reports, self._rejected = book.reports, book.rejected_reports
        return DeliveryShipment(seconds, reports, rejected)


def absorb(book: DeliveryBook, shipment: DeliveryShipment) -> None:
    """Worker 0's side: another worker's seconds and report counts into its own book."""
    book.reports += shipment.reports
    book.rejected_reports += shipment.rejected
    for share in shipment.seconds:
        second = DeliverySecond(share.second, _tally(share.member))
        second.patterns = {p: _tally(t) for p, t in share.patterns.items()}
        for leg, pairs in share.legs.items():
            if leg in second.legs:
                second.legs[leg] = _histogram(pairs)
        book.absorb(second)
