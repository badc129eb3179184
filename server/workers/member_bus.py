"""The server's cluster-wide services (occupancy, presence: server/occupancy.py) across the
worker processes of one server, on the mesh (ADR 060).

Occupancy already shares each member's subscriber counts and presence lists with the other
members (versioned deltas, a full state on a gap, a member that is no longer up is dropped).
A multi-process server runs the same protocol between its workers: each worker is a member of
its own name (``worker_member``), this bus carries the reports over the mesh instead of NATS,
and a worker whose link is down is not up (its subscribers leave, as a dead member's do). So
every worker knows the server's counts and lists and answers a client's ``presence`` question
itself; worker 0 (the first name) emits the events and serves the MBeans. What an operator
sees names the server (``fold``), never a worker.

No signature: the mesh is a private Unix link between the processes of one supervisor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from .wire import MeshMessage, MeshSignal

log = logging.getLogger(__name__)

Handler = Callable[[bytes], Awaitable[None]]


class _Mesh(Protocol):
    def up_peers(self) -> list[int]: ...
    def send(self, peer: int, message: MeshMessage) -> bool: ...


def worker_member(server: str, index: int) -> str:
    """Worker ``index``'s member name: worker 0 is the server's own name (it sorts first, so
    it is the occupancy emitter while it is up), the others add ``/worker-i``."""
    return server if index == 0 else f"{server}/worker-{index}"


class MeshBus:
    """engine.base.MemberBus over the mesh: every worker of the server is a member."""

    def __init__(self, mesh: _Mesh, index: int, workers: int) -> None:
        self._mesh = mesh
        self.index = index
        self.workers = workers
        self.server = ""  # the server's name (ServerName): ``named`` sets it before use
        self.name = ""  # this worker's member name
        self._handlers: dict[str, Handler] = {}
        # handled one at a time, in the order they arrived (a report's version check relies on it)
        self._inbox: asyncio.Queue[MeshSignal] | None = None
        self._task: asyncio.Task[None] | None = None

    def named(self, server: str) -> MeshBus:
        """This bus, for the server called ``server`` (its ``ServerName``)."""
        self.server, self.name = server, worker_member(server, self.index)
        return self

    @property
    def mesh(self) -> _Mesh:
        """The links to the other workers (worker 0 relays the cluster's messages on them)."""
        return self._mesh

    def fold(self, member: str) -> str:
        """The name an operator sees for ``member``: the server's for any of its workers."""
        names = {worker_member(self.server, i) for i in range(self.workers)}
        return self.server if member in names else member

    def up_members(self) -> list[str]:
        return [self.name, *(worker_member(self.server, p) for p in self._mesh.up_peers())]

    async def publish_signed(self, subject: str, data: bytes) -> None:
        signal = MeshSignal(subject, data)
        for peer in self._mesh.up_peers():
            self._mesh.send(peer, signal)

    async def subscribe_signed(self, subject: str, handler: Handler) -> None:
        self._handlers[subject] = handler
        if self._task is None:
            self._inbox = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._serve(self._inbox))

    def received(self, signal: MeshSignal) -> None:
        """A peer's message (from the mesh's reader): queued for its handler."""
        if self._inbox is not None and signal.subject in self._handlers:
            self._inbox.put_nowait(signal)

    async def _serve(self, inbox: asyncio.Queue[MeshSignal]) -> None:
        while True:
            signal = await inbox.get()
            try:
                await self._handlers[signal.subject](signal.data)
            except Exception:  # one bad message must not stop the service
                log.exception("worker %d: %s handler failed", self.index, signal.subject)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
