"""Weighted space-saving (Metwally, Agrawal, El Abbadi 2005) with uniform decay.

A fixed number of counters (``capacity``) ranks the heaviest items of a stream whatever the
number of distinct items. Guarantees, with ``total`` the sum of all weights added (decayed like
the counters), for every monitored item:

1. ``count - error <= true count <= count`` (never under-estimated, over-estimated by at most
   ``error``);
2. ``error <= min_count <= total / capacity``;
3. every item whose true count exceeds ``total / capacity`` is monitored.

:meth:`decay` multiplies every counter, every error and the total by the same factor, which is
the same as having added every past weight multiplied by it: the three guarantees hold for the
decayed true counts too (the bounds are linear). With a factor ``a`` per second, ``count * (1 -
a)`` estimates an item's rate per second (an exponentially weighted moving average).

``tests/unit/test_heavy_hitters.py`` checks the guarantees against exact counts on skewed
(Zipf) and uniform streams.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Counted:
    item: str
    count: float  # an upper bound of the true (decayed) count
    error: float  # count - error is a lower bound


class SpaceSaving:
    """``capacity`` counters; :meth:`add` is O(log capacity) amortised."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.total = 0.0
        self._counts: dict[str, float] = {}
        self._errors: dict[str, float] = {}
        # (count, item) entries, some stale (the item's count has grown since): a lazy min-heap,
        # rebuilt when stale entries pile up, so its size stays O(capacity).
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, item: str, weight: float = 1.0) -> None:
        if weight <= 0:
            return
        self.total += weight
        count = self._counts.get(item)
        if count is not None:
            count += weight
        elif len(self._counts) < self.capacity:
            count = weight
            self._errors[item] = 0.0
        else:
            floor, victim = self._pop_min()
            del self._counts[victim], self._errors[victim]
            count = floor + weight
            self._errors[item] = floor
        self._counts[item] = count
        heapq.heappush(self._heap, (count, item))
        if len(self._heap) > 4 * self.capacity + 64:
            self._rebuild()

    def decay(self, factor: float) -> None:
        """Multiply every count, error and the total by ``factor`` (0 < factor <= 1)."""
        if not 0.0 < factor <= 1.0:
            raise ValueError("decay factor must be in (0, 1]")
        self.total *= factor
        for item in self._counts:
            self._counts[item] *= factor
            self._errors[item] *= factor
        self._rebuild()

    def min_count(self) -> float:
        """The smallest counter (0 while not full): the error bound of a newly added item."""
        if len(self._counts) < self.capacity:
            return 0.0
        return min(self._counts.values())

    def top(self, n: int) -> list[Counted]:
        """The ``n`` items with the largest counts, largest first (ties by item)."""
        best = heapq.nsmallest(n, self._counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return [Counted(item, count, self._errors[item]) for item, count in best]

    def get(self, item: str) -> Counted | None:
        count = self._counts.get(item)
        return None if count is None else Counted(item, count, self._errors[item])

    def _pop_min(self) -> tuple[float, str]:
        while True:
            count, item = heapq.heappop(self._heap)
            if self._counts.get(item) == count:
                return count, item

    def _rebuild(self) -> None:
        self._heap = [(count, item) for item, count in self._counts.items()]
        heapq.heapify(self._heap)
