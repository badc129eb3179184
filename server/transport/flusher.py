"""Write coalescing: frames queued for a connection leave in a single ``transport.write``.

Idle, a frame waits only for the end of the current event-loop iteration (no timer). Under
load the loop rests ``tick`` seconds between the end of one flush and the start of the next
(ADR 012): frames queued meanwhile (several publishes) share one system call per subscriber
instead of one each. The added latency is bounded by ``tick``, and once a tick has passed
without a flush the next one is immediate again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Flushable(Protocol):
    def flush(self) -> None: ...

    def flush_due(self, due: float) -> None:
        """Flush if the batch that was due at ``due`` is still the one waiting."""


class Flusher:
    def __init__(self, loop: asyncio.AbstractEventLoop, tick: float = 0.0) -> None:
        self._loop = loop
        self._tick = tick
        self._dirty: list[Flushable] = []
        self._scheduled = False
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
            wait = self._rested_at - time.monotonic()
            if wait > 0:
                self._loop.call_later(wait, self._flush)
            else:
                self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, []
        for connection in dirty:
            connection.flush()
        if self._tick:
            self._rested_at = time.monotonic() + self._tick
