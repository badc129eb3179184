"""A histogram of short delays with fixed buckets, cheap enough to observe on the write path.

The flusher observes, once per flush, how long the oldest frame of that flush waited between
being queued for its connections and being handed to the kernel (ADR 012): the server's own
share of a subscriber's latency. Buckets are Prometheus ``le`` bounds in seconds; a reading is a
frozen :class:`DelaySnapshot` (cumulative counts), exported as ``pushgrid_flush_delay_seconds``.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

# Upper bounds in seconds: fine below 10 ms, where a push server's latency budget lies.
DELAY_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.002,
    0.003,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.02,
    0.03,
    0.05,
    0.075,
    0.1,
    0.25,
    1.0,
)


@dataclass(frozen=True, slots=True)
class DelaySnapshot:
    """Cumulative counts per upper bound (the last bound is +Inf), their sum, and the count."""

    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]  # len(bounds) + 1: the last one counts every observation
    count: int
    sum: float

    def since(self, earlier: DelaySnapshot) -> DelaySnapshot:
        """The observations made between ``earlier`` and this snapshot."""
        if earlier.bounds != self.bounds:
            raise ValueError("snapshots of histograms with different buckets")
        return DelaySnapshot(
            self.bounds,
            tuple(a - b for a, b in zip(self.cumulative, earlier.cumulative, strict=True)),
            self.count - earlier.count,
            self.sum - earlier.sum,
        )

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding the ``q`` quantile (``inf`` past the last
        bound); None without observations. An upper estimate, as Prometheus buckets give."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must be within [0, 1], not {q}")
        if self.count == 0:
            return None
        rank = q * self.count
        for bound, seen in zip((*self.bounds, float("inf")), self.cumulative, strict=True):
            if seen >= rank and seen > 0:
                return bound
        return float("inf")


class DelayHistogram:
    """Counts per bucket; :meth:`observe` is one bisect and three additions."""

    __slots__ = ("_counts", "bounds", "count", "sum")

    def __init__(self, bounds: tuple[float, ...] = DELAY_BUCKETS) -> None:
        if not bounds or list(bounds) != sorted(set(bounds)) or bounds[0] <= 0:
            raise ValueError("bucket bounds must be positive, distinct and increasing")
        self.bounds = bounds
        self._counts = [0] * (len(bounds) + 1)  # the last one: above every bound
        self.count = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self._counts[bisect_left(self.bounds, seconds)] += 1
        self.count += 1
        self.sum += seconds

    def snapshot(self) -> DelaySnapshot:
        cumulative: list[int] = []
        running = 0
        for n in self._counts:
            running += n
            cumulative.append(running)
        return DelaySnapshot(self.bounds, tuple(cumulative), self.count, self.sum)
