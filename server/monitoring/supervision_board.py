"""What the supervisor knows of each worker, for worker 0's Workers MBean (docs/workers.md).

The supervisor (a separate process) sees each worker's restarts and heartbeats; worker 0 serves
the monitoring view. A :class:`SupervisionBoard` is an anonymous shared memory page the
supervisor creates before it forks: every worker inherits it (a restarted one too), the
supervisor writes a slot per worker whenever it starts one, hears it beat, finds it stalled or
sees it die, and worker 0 reads the slots when the MBean is read. No socket, no message: the
numbers are there even while worker 0's mesh is down.

A slot is four 8-byte numbers, written one at a time: a reader may see a slot half updated
(the pid of a new life with the heartbeat of the old one) for one read. The heartbeat is on
``time.monotonic()``, which is the same clock in every process of the machine.
"""

from __future__ import annotations

import mmap
import struct
import time
from typing import Final, NamedTuple

from pushgrid.ops.workers import not_answering

_SLOT: Final = struct.Struct("<qqdq")  # pid, restarts, last heartbeat (monotonic), stalled


class SlotState(NamedTuple):
    """One worker as the supervisor last wrote it."""

    pid: int  # 0: dead, waiting for its restart
    restarts: int
    heartbeat_age: float  # seconds since its last heartbeat (or its start)
    stalled: bool  # the supervisor reported it not answering


class SupervisionBoard:
    """A shared page of one slot per worker (create it before forking)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._page = mmap.mmap(-1, max(mmap.PAGESIZE, _SLOT.size * workers))

    def write(self, index: int, pid: int, restarts: int, last_beat: float, stalled: bool) -> None:
        _SLOT.pack_into(self._page, index * _SLOT.size, pid, restarts, last_beat, int(stalled))

    def read(self, index: int, now: float | None = None) -> SlotState:
        pid, restarts, last_beat, stalled = _SLOT.unpack_from(self._page, index * _SLOT.size)
        age = (time.monotonic() if now is None else now) - last_beat if last_beat else 0.0
        return SlotState(pid, restarts, round(max(0.0, age), 3), bool(stalled))


def silent_for(board: SupervisionBoard, index: int) -> float | None:
    """Seconds worker ``index`` has not answered its heartbeat for, None while it answers (or
    while it is dead and being restarted: that is the mesh's link, not a silence)."""
    slot = board.read(index)
    if slot.pid == 0 or not (slot.stalled or not_answering(slot.heartbeat_age)):
        return None
    return slot.heartbeat_age
