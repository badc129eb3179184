"""PublishRatePerAddress across the worker processes of one server (ADR 060).

One address's connections may land on every worker (the kernel spreads them), and its publish
rate is the server's to limit. Each worker keeps its own token bucket per address, so a
publish is still admitted or refused at once, with no question on the mesh (a round trip per
publish would add a mesh message each way and a turn of two event loops to every publish).
Each worker counts the tokens its connections took per address and, every ``SHARE_INTERVAL``,
sends those counts to every other worker (``MeshSpent``), which takes as many from its own
bucket of that address (created full if it had none). A bucket may go into debt: its
connections wait until the refill pays it. So the server admits per address at most the
rate over time, plus each worker's burst, plus what the others admitted during the last
``SHARE_INTERVAL`` before they heard of it. An address on one worker only is limited exactly
as in one process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from pushgrid.kernel.throttle import MAX_TRACKED_ADDRESSES, AddressBuckets, Clock, TokenBucket

from .wire import MeshSpent

#: seconds between two shares of a worker's spent tokens: the lag of the limit across workers
SHARE_INTERVAL = 0.1


class _SharedBucket(TokenBucket):
    """A token bucket that also pays for what other workers took (it may go into debt)."""

    __slots__ = ()

    def debit(self, tokens: int, now: float) -> None:
        if self.rate <= 0:
            return
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate) - tokens
        self._stamp = now


class SharedAddressBuckets(AddressBuckets):
    """One worker's buckets per address, which pay for the other workers' publishes too."""

    def __init__(self, rate: float, burst: int, clock: Clock = time.monotonic) -> None:
        super().__init__(rate, burst, clock)
        self._shared: dict[str, _SharedBucket] = {}
        self.spent: dict[str, int] = {}  # tokens taken here since the last share

    def take(self, address: str) -> bool:
        if self.rate <= 0:
            return True
        now = self.clock()
        taken = self._bucket(address, now).take(now)
        if taken:
            self.spent[address] = self.spent.get(address, 0) + 1
        return taken

    def debit(self, spent: dict[str, int]) -> None:
        """Another worker's connections took these tokens (per address)."""
        now = self.clock()
        for address, tokens in spent.items():
            self._bucket(address, now).debit(tokens, now)

    def take_spent(self) -> dict[str, int]:
        spent, self.spent = self.spent, {}
        return spent

    def _bucket(self, address: str, now: float) -> _SharedBucket:
        bucket = self._shared.get(address)
        if bucket is None:
            if len(self._shared) >= MAX_TRACKED_ADDRESSES:
                self._forget(now)
            bucket = self._shared[address] = _SharedBucket(self.rate, self.burst, now)
        return bucket

    def _forget(self, now: float) -> None:
        """Bounded memory, as AddressBuckets: full buckets first, then the oldest."""
        for address in [a for a, b in self._shared.items() if b.full_at(now)]:
            del self._shared[address]
        while len(self._shared) >= MAX_TRACKED_ADDRESSES:
            del self._shared[next(iter(self._shared))]


async def share_spent(
    buckets: SharedAddressBuckets,
    peers: Callable[[], list[int]],
    send: Callable[[int, MeshSpent], bool],
) -> None:
    """Every SHARE_INTERVAL: the tokens this worker's connections took, to every other worker
    (nothing is sent while nobody published)."""
    while True:
        await asyncio.sleep(SHARE_INTERVAL)
        spent = buckets.take_spent()
        if spent:
            message = MeshSpent(spent)
            for peer in peers():
                send(peer, message)
