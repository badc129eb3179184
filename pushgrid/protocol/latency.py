"""Delivery-latency histograms: fixed log-scale buckets shared by the clients and the server.

A client measures each live message's latency (its receipt minus the message's ``ingress``
time, corrected by the client's clock offset to the server) and counts it in one of
:data:`BUCKET_COUNT` buckets; a ``report`` frame carries the non-empty buckets as
``[index, count]`` pairs (docs/protocol.md 5.7). Because every client, member and the admin API
use the same bounds, histograms merge by adding counts, exactly, at any level (session, member,
watched pattern, cluster, archive second).

Bucket ``i`` (1 <= i < BUCKET_COUNT - 1) holds latencies in ``(UPPER[i-1], UPPER[i]]``
microseconds; bucket 0 holds everything up to ``UPPER[0]`` = 10 us (a negative reading, which a
clock-offset error can produce, included); the last bucket holds everything above 100 s.
Ten buckets per decade: each bound is 10^(1/10) ~ 1.259 times the one before, so a percentile
read from the buckets is within 26 % of the true value, whatever the scale. Bounds are integers
(``round(10 ** (1 + i / 10))``): the browser client computes the same table (its rounding is
far from any .5: tests/unit/test_latency_histogram.py).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence

#: buckets per decade and decades covered (10 us .. 100 s)
PER_DECADE = 10
DECADES = 7
#: upper bounds in microseconds of buckets 0 .. BUCKET_COUNT - 2 (the last bucket is unbounded)
UPPER: tuple[int, ...] = tuple(
    round(10 ** (1 + i / PER_DECADE)) for i in range(PER_DECADE * DECADES + 1)
)
BUCKET_COUNT = len(UPPER) + 1  # 72

#: the most a report may say of one bucket, a counter, or one subject entry's total: a client
#: reports every few seconds, so 10^7 per report is 2 million messages a second
MAX_COUNT = 10_000_000


def bucket_of(micros: float) -> int:
    """The bucket holding a latency of ``micros`` microseconds."""
    return bisect_left(UPPER, micros)


def bucket_upper(index: int) -> float:
    """The bucket's upper bound in seconds (``inf`` for the last)."""
    return UPPER[index] / 1e6 if index < len(UPPER) else float("inf")


def bucket_lower(index: int) -> float:
    """The bucket's lower bound in seconds (0 for the first)."""
    return UPPER[index - 1] / 1e6 if index > 0 else 0.0


class LatencyHistogram:
    """Counts per bucket; :meth:`observe` is one bisect and two additions.

    Used by the client (a report period's samples), by the server (a session, a member, a
    pattern, a second of the archive) and by the admin API (the cluster-wide merge)."""

    __slots__ = ("count", "counts")

    def __init__(self, counts: Sequence[int] | None = None) -> None:
        self.counts: list[int] = list(counts) if counts is not None else [0] * BUCKET_COUNT
        if len(self.counts) != BUCKET_COUNT:
            raise ValueError(f"a latency histogram has {BUCKET_COUNT} buckets")
        self.count = sum(self.counts)

    def observe(self, micros: float) -> None:
        self.counts[bisect_left(UPPER, micros)] += 1
        self.count += 1

    def add_pairs(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Add ``[index, count]`` pairs (a checked report's buckets)."""
        counts = self.counts
        for index, n in pairs:
            counts[index] += n
            self.count += n

    def merge(self, other: LatencyHistogram) -> None:
        counts = self.counts
        for index, n in enumerate(other.counts):
            if n:
                counts[index] += n
        self.count += other.count

    def pairs(self) -> list[tuple[int, int]]:
        """The non-empty buckets as ``(index, count)``, the report's compact form."""
        return [(i, n) for i, n in enumerate(self.counts) if n]

    def clear(self) -> None:
        self.counts = [0] * BUCKET_COUNT
        self.count = 0

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile in seconds: the upper bound of the bucket holding the sample of
        rank ``ceil(q * count)`` (the nearest-rank definition; ``inf`` past the last bound).
        None without samples. The true value lies in that bucket: at most 26 % below it."""
        return quantile_of(self.counts, self.count, q)


def quantile_of(counts: Sequence[int], total: int, q: float) -> float | None:
    """:meth:`LatencyHistogram.quantile` over bare counts (merged rows, decoded attributes)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within [0, 1], not {q}")
    if total <= 0:
        return None
    # nearest rank, in integers: the smallest rank r with r >= q * total (at least 1)
    rank = max(1, -(-round(q * 1_000_000) * total // 1_000_000))
    seen = 0
    for index, n in enumerate(counts):
        seen += n
        if seen >= rank:
            return bucket_upper(index)
    return bucket_upper(len(counts) - 1)


#: a report entry's loss counters (protocol/frames.py ReportEntry), in this order everywhere
LOSS_KINDS: tuple[str, ...] = ("gaps", "duplicates", "resyncs", "recovered", "recovery_failed")

#: the server's own legs, measured on the same buckets (server/core/delivery.py): ingress to
#: the engine's acknowledgement, ingress to this member's fan-out, the fan-out's own work
LEGS: tuple[str, ...] = ("publish_ack", "engine", "fanout")

#: the percentiles every view shows, with the suffix of their names
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p999", 0.999),
)
