"""Write coalescing: frames queued for a connection leave in a single ``transport.write``.

Idle, a frame waits only for the end of the current event-loop iteration (no timer). Under
load the loop rests between the end of one flush and the start of the next (ADR 012): twice as
long as that flush took, at most ``tick`` seconds. Frames queued meanwhile (several publishes)
share one system call per subscriber instead of one each. A cheap flush (few connections) is
followed by a short rest, so small fan-outs keep their latency; an expensive one (a thousand
sockets) buys itself the time to coalesce, up to ``tick``: with a tick long enough the loop
spends about a third of its time flushing. The added latency is bounded by ``tick``, and once a
rest has passed without a flush the next one is immediate again.

Under saturation (a flush as costly as the tick allows) the rest lasts while the clients'
input still arrives, up to ``REST_MAX`` ticks (ADR 064): a write per subscriber then carries
what the publishers had in flight, and the write calls per delivery (the kernel's share of a
delivery's cost) fall by a third.
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
#: After a flush that costs the whole rest (a large fan-out: the rest is the tick), the rest goes
#: on while the clients' input keeps arriving (ADR 064): every ``REST_STEP`` ticks it looks
#: whether anything was read since it last looked and rests another step if so, at most
#: ``REST_MAX`` ticks after the flush in all. A publisher that waits for its deliveries stops
#: sending once its window is queued; that lull ends the rest, so one write per subscriber
#: carries what the publishers had in flight, not what fits in one tick. A cheap flush (a
#: small fan-out) never waits longer than before.
REST_STEP = 0.5
REST_MAX = 6.0


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
        # Reads from clients (Connection._count_in), to see whether input still arrives
        # during a rest; _heard_seen is the count when the rest last looked.
        self.heard = 0
        self._heard_seen = 0
        self._rest_ends = float("-inf")  # time.monotonic() the rest may last until at most

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
                self._heard_seen = self.heard
                self._loop.call_later(wait, self._flush_rested)
            else:
                self._loop.call_soon(self._flush)

    def _flush_rested(self) -> None:
        """The rest is over: flush, unless input arrived since the rest last looked (more
        deliveries to coalesce are on their way) and the longest rest has not passed."""
        heard = self.heard
        if heard != self._heard_seen:
            self._heard_seen = heard
            step = self._tick * REST_STEP
            if time.monotonic() + step <= self._rest_ends:
                self._loop.call_later(step, self._flush_rested)
                return
        self._flush()

    def _flush(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, []
        started = time.monotonic()
        for connection in dirty:
            connection.flush()
        ended = time.monotonic()
        self.delays.observe(ended - self._first_marked)
        if self._tick:
            rest = rest_after(ended - started, self._tick)
            self._rested_at = ended + rest
            # Only a flush as costly as the tick allows earns the longer rest (saturation).
            self._rest_ends = ended + REST_MAX * self._tick if rest >= self._tick else ended
