"""Occupancy and presence between the members of a cluster whose members run several workers
(ADR 067).

Each worker is a member of its own name on its server's mesh (``m1``, ``m1/worker-1``:
server/workers/member_bus.py). With a cluster engine only worker 0 has the cluster's bus (its
NATS connection), so it relays, in both directions:

- what its workers send on the mesh (their reports and asks) goes to the cluster, signed like
  its own;
- what the other members send (verified by the cluster link) goes to its workers over the mesh.
  The cluster echoes this host's own messages back: a report of one of its own workers is
  dropped there (the workers heard it on the mesh), an ask is passed on (it may ask one of them).

Who is up: this host's linked workers, the cluster's members that are up (worker 0: its link;
the others: worker 0's cluster view), and the workers of those members heard from (``m2/worker-1``
is up while ``m2`` is: a worker of another member that dies is replaced by its restart's full
report, or dropped when its member leaves). Names fold to the member's (``fold``), so nothing
an operator or a client sees names a worker.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import msgspec

from .engine.base import MemberBus
from .workers.member_bus import MeshBus
from .workers.wire import MeshSignal

Handler = Callable[[bytes], Awaitable[None]]

_WORKER_SUFFIX = re.compile(r"/worker-\d+$")


def member_of(name: str) -> str:
    """The member a bus name belongs to: ``m2/worker-1`` -> ``m2``."""
    return _WORKER_SUFFIX.sub("", name)


class _Sent(msgspec.Struct):
    """What every occupancy message carries: a report's sender, an ask's target."""

    member: str = ""
    version: int | None = None  # reports only


def _sent(data: bytes) -> _Sent:
    try:
        return msgspec.json.decode(data, type=_Sent)
    except msgspec.DecodeError:
        return _Sent()


class ClusterWorkerBus:
    """A worker's MemberBus on a clustered server: the mesh, plus the other members (through
    worker 0, which holds ``link``; ``cluster_up``: the members up as worker 0's view says)."""

    def __init__(
        self,
        mesh_bus: MeshBus,
        cluster_up: Callable[[], list[str]],
        link: MemberBus | None = None,
    ) -> None:
        self._bus = mesh_bus
        self._cluster_up = cluster_up
        self._link = link
        self.name = mesh_bus.name
        self._heard: set[str] = set()  # other members' workers heard from

    def fold(self, member: str) -> str:
        return member_of(member)

    def up_members(self) -> list[str]:
        members = set(self._cluster_up()) - {self._bus.server}
        workers = {n for n in self._heard if member_of(n) in members}
        return sorted(set(self._bus.up_members()) | members | workers)

    async def publish_signed(self, subject: str, data: bytes) -> None:
        await self._bus.publish_signed(subject, data)
        if self._link is not None:
            await self._link.publish_signed(subject, data)

    async def subscribe_signed(self, subject: str, handler: Handler) -> None:
        link = self._link

        async def from_mesh(data: bytes) -> None:
            self._note(data)
            await handler(data)
            if link is not None:  # worker 0: one of its workers speaks to the cluster
                await link.publish_signed(subject, data)

        await self._bus.subscribe_signed(subject, from_mesh)
        if link is None:
            return

        async def from_cluster(data: bytes) -> None:
            sent = _sent(data)
            if sent.version is not None and member_of(sent.member) == self._bus.server:
                return  # this host's own report, echoed: heard on the mesh already
            self._note(data)
            signal = MeshSignal(subject, data)
            for peer in self._bus.mesh.up_peers():
                self._bus.mesh.send(peer, signal)
            await handler(data)

        await link.subscribe_signed(subject, from_cluster)

    def _note(self, data: bytes) -> None:
        sent = _sent(data)
        if sent.version is not None and sent.member != member_of(sent.member):
            self._heard.add(sent.member)
