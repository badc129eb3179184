"""Write coalescing: frames queued for a connection leave in a single ``transport.write``.

Idle, a frame waits only for the end of the current event-loop iteration (no timer). Under
load the loop rests between the end of one flush and the start of the next (ADR 012): twice as
long as that flush took, at most ``tick`` seconds. Frames queued meanwhile (several publishes)
share one system call per subscriber instead of one each. A cheap flush (few connections) is
followed by a short rest, so small fan-outs keep their latency; an expensive one (a thousand
sockets) buys itself the time to coalesce, up to ``tick``: with a tick long enough the loop
spends about a third of its time flushing. The added latency is bounded by ``tick``, and once a
rest has passed without a flush the next one is immediate again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from pushgrid.metrics.delays import DelayHistogram

# The rest after a flush, in flushes: 2 lets a long enough tick bring the flushing down to
# about a third of the loop (benchmarks/NOTES.md, "Flush tick on by default"), while a cheap
# flush still rests only microseconds.
REST_PER_FLUSH = 2.0


def rest_after(flush_seconds: float, tick: float) -> float:
    """How long the loop rests after a flush that took ``flush_seconds``: twice as long, at
    most ``tick`` (0: no rest, every iteration flushes)."""
    return min(tick, REST_PER_FLUSH * flush_seconds)


class Flushable(Protocol):
    def flush(self) -> None: ...

    def flush_due(self, due: float) -> None:
        """Flush if the batch that was due at ``due`` is still the one waiting."""


class Flusher:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        tick: float = 0.0,
        delays: DelayHistogram | None = None,
    ) -> None:
        self._loop = loop
        self._tick = tick
        self._dirty: list[Flushable] = []
        self._scheduled = False
        # Per flush: how long its oldest frame waited, from the first mark to the end of the
        # flush (the server's own share of the latency; pushgrid_flush_delay_seconds).
        self.delays = delays if delays is not None else DelayHistogram()
        self._first_marked = 0.0
        # time.monotonic() before which the next flush waits: uvloop's loop.time() is the
        # iteration's start, and a fan-out flush can take milliseconds.
        self._rested_at = float("-inf")
        self._later: dict[float, list[Flushable]] = {}

    def mark_later(self, connection: Flushable, delay: float) -> float:
        """Flush ``connection`` after ``delay`` seconds (batching). Connections marked in the same
        loop iteration share one timer: ``loop.time()`` is the same for all of them."""
        due = self._loop.time() + delay
        waiting = self._later.get(due)
        if waiting is None:
            self._later[due] = [connection]
            self._loop.call_at(due, self._flush_due, due)
        else:
            waiting.append(connection)
        return due

    def _flush_due(self, due: float) -> None:
        for connection in self._later.pop(due, ()):
            connection.flush_due(due)

    def mark(self, connection: Flushable) -> None:
        """Flush ``connection`` at the end of this loop iteration, or at the next tick under load
        (call once per dirty period)."""
        self._dirty.append(connection)
        if not self._scheduled:
            self._scheduled = True
            now = self._first_marked = time.monotonic()
            wait = self._rested_at - now
            if wait > 0:
                self._loop.call_later(wait, self._flush)
            else:
                self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, []
        started = time.monotonic()
        for connection in dirty:
            connection.flush()
        ended = time.monotonic()
        self.delays.observe(ended - self._first_marked)
        if self._tick:
            self._rested_at = ended + rest_after(ended - started, self._tick)
