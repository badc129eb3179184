"""The links between the worker processes of one server: one ordered stream per pair.

Worker ``i`` listens on an abstract Unix socket named after the server's supervisor
(``\\0pushgrid-workers-<token>-<i>``: nothing on disk to clean up, gone with the process) and
connects to every worker with a smaller index; the larger index always dials, so a pair never
has two links. A restarted worker listens again under the same name: the larger indexes dial
it again, and it dials the smaller ones. A link is a plain Unix stream (ADR 044 measured it:
about 2 µs per forwarded message when writes are batched), and writes are batched: everything
sent to one peer during one turn of the event loop leaves in one ``write``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Protocol, cast

from .wire import FrameReader, MeshFrameError, MeshHello, MeshMessage, encode

log = logging.getLogger(__name__)

_REDIAL_DELAY = 0.1  # seconds between two attempts to reach a smaller index
#: bytes queued towards one peer beyond which the link is dropped (a stopped peer must not grow
#: this process's memory without bound); its subscribers see a gap and recover (docs/workers.md)
MAX_LINK_BACKLOG = 64 * 1024 * 1024


def mesh_address(token: str, index: int) -> str:
    """The abstract socket worker ``index`` of the server ``token`` listens on."""
    return f"\0pushgrid-workers-{token}-{index}"


class MeshHandler(Protocol):
    """What the mesh tells its owner (the workers' engine)."""

    def peer_up(self, peer: int) -> None: ...

    def peer_down(self, peer: int) -> None: ...

    def received(self, peer: int, message: MeshMessage) -> None: ...


class _Link(asyncio.Protocol):
    """One end of a link; ``peer`` is known at once when this end dialled, else from MeshHello."""

    def __init__(self, mesh: Mesh, peer: int | None) -> None:
        self.mesh = mesh
        self.peer = peer
        self.transport: asyncio.Transport | None = None
        self.closed = asyncio.get_running_loop().create_future()
        self._reader = FrameReader()
        self._pending: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        transport = self.transport
        if self.peer is not None:  # this end dialled: say who it is, then it is up
            transport.write(encode(MeshHello(self.mesh.index)))
            self.mesh.attach(self)

    def data_received(self, data: bytes) -> None:
        try:
            messages = self._reader.feed(data)
        except MeshFrameError as exc:
            log.error(
                "worker %s sent bytes that are not mesh frames (%s): link dropped", self.peer, exc
            )
            self.abort()
            return
        mesh = self.mesh
        for message in messages:
            if self.peer is None:
                if not isinstance(message, MeshHello):
                    log.error("a mesh link opened without MeshHello: dropped")
                    self.abort()
                    return
                self.peer = message.index
                mesh.attach(self)
                continue
            mesh.handler.received(self.peer, message)

    def connection_lost(self, exc: Exception | None) -> None:
        self.mesh.detach(self)
        if not self.closed.done():
            self.closed.set_result(None)

    def send(self, message: MeshMessage) -> None:
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(encode(message))

    def _flush(self) -> None:
        transport, pending = self.transport, self._pending
        self._pending = []
        if transport is None or transport.is_closing() or not pending:
            return
        transport.write(b"".join(pending))
        if transport.get_write_buffer_size() > MAX_LINK_BACKLOG:
            log.warning(
                "worker %s reads its mesh link too slowly (over %d bytes queued): link dropped",
                self.peer,
                MAX_LINK_BACKLOG,
            )
            self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class Mesh:
    """This worker's links to the ``workers - 1`` others."""

    def __init__(self, token: str, index: int, workers: int, handler: MeshHandler) -> None:
        self.token = token
        self.index = index
        self.workers = workers
        self.handler = handler
        self._links: dict[int, _Link] = {}
        self._server: asyncio.AbstractServer | None = None
        self._dialers: list[asyncio.Task[None]] = []
        self._closing = False
        self._complete = asyncio.Event()  # a link to every other worker

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # the sockets are made here: uvloop refuses an abstract name given as a path
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(mesh_address(self.token, self.index))
        listener.listen(self.workers * 2)
        listener.setblocking(False)
        self._server = await loop.create_unix_server(lambda: _Link(self, None), sock=listener)
        self._dialers = [loop.create_task(self._dial(peer)) for peer in range(self.index)]

    async def _dial(self, peer: int) -> None:
        """Keep a link to ``peer`` (a smaller index) open: dial again whenever it is lost."""
        loop = asyncio.get_running_loop()
        address = mesh_address(self.token, peer)
        while not self._closing:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                await loop.sock_connect(sock, address)
                _transport, link = await loop.create_unix_connection(
                    lambda: _Link(self, peer), sock=sock
                )
            except OSError:
                sock.close()
                await asyncio.sleep(_REDIAL_DELAY)
                continue
            await link.closed
            await asyncio.sleep(_REDIAL_DELAY)

    def attach(self, link: _Link) -> None:
        assert link.peer is not None
        old = self._links.get(link.peer)
        self._links[link.peer] = link
        if old is not None:  # the peer restarted and dialled before we saw the old link go
            old.peer = None
            old.abort()
            self.handler.peer_down(link.peer)
        log.debug("worker %d: link to worker %d up", self.index, link.peer)
        if len(self._links) == self.workers - 1:
            self._complete.set()
        self.handler.peer_up(link.peer)

    def detach(self, link: _Link) -> None:
        peer = link.peer
        if peer is None or self._links.get(peer) is not link:
            return
        del self._links[peer]
        self._complete.clear()
        if not self._closing:
            self.handler.peer_down(peer)

    async def wait_complete(self, within: float) -> list[int]:
        """Wait (at most ``within`` s) for a link to every other worker; the missing ones."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._complete.wait(), within)
        return [p for p in range(self.workers) if p != self.index and p not in self._links]

    def is_up(self, peer: int) -> bool:
        return peer in self._links

    def up_peers(self) -> list[int]:
        return sorted(self._links)

    def send(self, peer: int, message: MeshMessage) -> bool:
        """Queue ``message`` for ``peer``; False when there is no link to it now."""
        link = self._links.get(peer)
        if link is None:
            return False
        link.send(message)
        return True

    async def close(self) -> None:
        self._closing = True
        for task in self._dialers:
            task.cancel()
        for task in self._dialers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            self._server.close()
        for link in list(self._links.values()):
            link.abort()
        self._links.clear()
