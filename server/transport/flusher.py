"""Write coalescing: frames queued for a connection during one event-loop iteration leave in a
single ``transport.write``. Under load many messages share one system call per subscriber; at
low rates a frame waits only for the end of the current iteration (no timer)."""

from __future__ import annotations

import asyncio
from typing import Protocol


class Flushable(Protocol):
    def flush(self) -> None: ...

    def flush_due(self, due: float) -> None:
        """Flush if the batch that was due at ``due`` is still the one waiting."""


class Flusher:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._dirty: list[Flushable] = []
        self._scheduled = False
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
        """Flush ``connection`` at the end of this loop iteration (call once per dirty period)."""
        self._dirty.append(connection)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, []
        for connection in dirty:
            connection.flush()
