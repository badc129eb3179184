"""Rate limits as pure objects (a clock is passed in): publish token buckets and the per-address
back-off of authentication failures. No sockets, no asyncio.

- :class:`TokenBucket`: ``rate`` tokens a second up to ``burst``; a publish takes one.
- :class:`AddressBuckets`: one bucket per client address (host), shared by its connections.
- :class:`AuthThrottle`: after ``free`` failed logins from one address, each further attempt
  must wait a back-off that doubles per failure up to ``max_delay`` seconds; a success clears
  the address. Used by the monitoring port and the admin API.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]
MAX_TRACKED_ADDRESSES = 10_000  # beyond this the oldest entries are forgotten (bounded memory)


class TokenBucket:
    """``rate`` <= 0 means unlimited."""

    __slots__ = ("_stamp", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._tokens = float(burst)
        self._stamp = now

    def take(self, now: float) -> bool:
        if self.rate <= 0:
            return True
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def full_at(self, now: float) -> bool:
        """Whether the bucket would be full at ``now`` (it can then be forgotten)."""
        return self.rate <= 0 or self._tokens + (now - self._stamp) * self.rate >= self.burst


class AddressBuckets:
    """A bucket per address, created on first use; full buckets are dropped when many exist."""

    def __init__(self, rate: float, burst: int, clock: Clock = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, TokenBucket] = {}

    def take(self, address: str) -> bool:
        if self.rate <= 0:
            return True
        now = self.clock()
        bucket = self._buckets.get(address)
        if bucket is None:
            if len(self._buckets) >= MAX_TRACKED_ADDRESSES:
                self._prune(now)
            bucket = self._buckets[address] = TokenBucket(self.rate, self.burst, now)
        return bucket.take(now)

    def _prune(self, now: float) -> None:
        for address in [a for a, b in self._buckets.items() if b.full_at(now)]:
            del self._buckets[address]
        while len(self._buckets) >= MAX_TRACKED_ADDRESSES:  # all busy: forget the oldest
            del self._buckets[next(iter(self._buckets))]


@dataclass(slots=True)
class _Failures:
    count: int
    blocked_until: float
    last: float


class AuthThrottle:
    """Per-address back-off after failed authentications (brute-force protection)."""

    def __init__(
        self, free: int = 5, max_delay: float = 30.0, clock: Clock = time.monotonic
    ) -> None:
        self.free = free
        self.max_delay = max_delay
        self.clock = clock
        self.failures_total = 0
        self.throttled_total = 0
        self._by_address: dict[str, _Failures] = {}

    def retry_after(self, address: str) -> float:
        """Seconds ``address`` must still wait before its next attempt is even checked (0: go).
        Counts the attempt as throttled when it must wait."""
        entry = self._by_address.get(address)
        if entry is None:
            return 0.0
        wait = entry.blocked_until - self.clock()
        if wait <= 0:
            return 0.0
        self.throttled_total += 1
        return wait

    def blocked_for(self, address: str) -> float:
        """Seconds ``address`` is still backed off (0: not), without counting an attempt."""
        entry = self._by_address.get(address)
        return 0.0 if entry is None else max(0.0, entry.blocked_until - self.clock())

    def failed(self, address: str) -> None:
        now = self.clock()
        self.failures_total += 1
        entry = self._by_address.get(address)
        if entry is None or now - entry.last > 2 * self.max_delay:  # forgiven after a quiet spell
            if len(self._by_address) >= MAX_TRACKED_ADDRESSES:
                self._prune(now)
            entry = self._by_address[address] = _Failures(0, 0.0, now)
        entry.count += 1
        entry.last = now
        if entry.count >= self.free:
            delay = min(self.max_delay, 0.5 * 2 ** (entry.count - self.free))
            entry.blocked_until = now + delay

    def succeeded(self, address: str) -> None:
        self._by_address.pop(address, None)

    def _prune(self, now: float) -> None:
        for address in [
            a for a, e in self._by_address.items() if now - e.last > 2 * self.max_delay
        ]:
            del self._by_address[address]
        while len(self._by_address) >= MAX_TRACKED_ADDRESSES:
            del self._by_address[next(iter(self._by_address))]


def host_of(remote: str) -> str:
    """The host part of ``host:port`` (``[v6]:port`` too)."""
    return remote.rpartition(":")[0].strip("[]") or remote
