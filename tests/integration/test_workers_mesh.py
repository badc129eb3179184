"""The workers' mesh on real abstract Unix sockets: links come up, carry frames in order, go
down with a worker and come back when a worker of the same index starts again (a restart)."""

from __future__ import annotations

import asyncio
import os

from pushgrid.server.workers.mesh import Mesh
from pushgrid.server.workers.wire import MeshInterest, MeshMessage


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, int, object]] = []
        self.changed = asyncio.Event()

    def _note(self, event: tuple[str, int, object]) -> None:
        self.events.append(event)
        self.changed.set()

    def peer_up(self, peer: int) -> None:
        self._note(("up", peer, None))

    def peer_down(self, peer: int) -> None:
        self._note(("down", peer, None))

    def received(self, peer: int, message: MeshMessage) -> None:
        self._note(("got", peer, message))

    async def until(self, count: int) -> None:
        async with asyncio.timeout(30):
            while len(self.events) < count:
                self.changed.clear()
                await self.changed.wait()


async def test_links_carry_frames_in_order_and_survive_a_restart() -> None:
    token = f"test-{os.getpid()}-{os.urandom(3).hex()}"
    zero, one = Recorder(), Recorder()
    mesh0, mesh1 = Mesh(token, 0, 2, zero), Mesh(token, 1, 2, one)
    await mesh0.start()
    await mesh1.start()
    await zero.until(1)
    await one.until(1)
    assert (zero.events, one.events) == ([("up", 1, None)], [("up", 0, None)])

    sent = [MeshInterest(f"/s/{i}", i % 2 == 0) for i in range(500)]
    for message in sent:
        assert mesh1.send(0, message)
    await zero.until(501)
    assert [e[2] for e in zero.events[1:]] == sent  # one write per loop turn, in order

    await mesh1.close()  # worker 1 dies
    await zero.until(502)
    assert zero.events[-1] == ("down", 1, None)
    assert not mesh0.send(1, MeshInterest("/x", True))

    again = Recorder()
    restarted = Mesh(token, 1, 2, again)  # the same index listens and dials again
    await restarted.start()
    await zero.until(503)
    await again.until(1)
    assert zero.events[-1] == ("up", 1, None)
    assert mesh0.send(1, MeshInterest("/back", True))
    await again.until(2)
    assert again.events[-1] == ("got", 0, MeshInterest("/back", True))
    await restarted.close()
    await mesh0.close()
