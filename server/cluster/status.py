"""What a member knows about its cluster: the read model every monitoring view formats.

Standalone servers report a one-member cluster that always has its quorum, so dashboards and
alert rules work the same with and without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

MemberState = Literal["up", "down"]


@dataclass(frozen=True, slots=True)
class MemberView:
    name: str  # ServerName (or the ClusterMembers entry until the member has been heard)
    index: int  # position in ClusterMembers; 0 for a member of an external NATS cluster
    address: str  # the ClusterMembers entry ("" when external)
    seed: bool
    state: MemberState
    is_self: bool
    client_urls: tuple[str, ...] = ()
    monitor_urls: tuple[str, ...] = ()
    last_seen_seconds: float | None = None  # since its last heartbeat


@dataclass(frozen=True, slots=True)
class ReplicaView:
    name: str
    current: bool
    lag: int


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    engine: str  # memory | nats
    mode: str  # standalone | standard | guaranteed
    members: tuple[MemberView, ...]
    seeds: int
    quorum_size: int
    quorum: bool  # this member can store messages (always true without JetStream)
    nats_connected: bool
    meta_leader: str | None = None
    stream_leader: str | None = None
    replicas: tuple[ReplicaView, ...] = field(default=())
    stream_messages: int = 0
    config_mismatch: tuple[str, ...] = ()  # members whose ClusterMembers differ from ours

    @property
    def members_up(self) -> int:
        return sum(1 for m in self.members if m.state == "up")

    @property
    def healthy(self) -> bool:
        return self.quorum and self.nats_connected and not self.config_mismatch

    @property
    def health(self) -> str:
        """``ok``, or ``degraded`` if this member cannot store messages or disagrees on members."""
        return "ok" if self.healthy else "degraded"


def standalone_status(name: str) -> ClusterStatus:
    me = MemberView(name, 1, "", seed=True, state="up", is_self=True)
    return ClusterStatus(
        engine="memory",
        mode="standalone",
        members=(me,),
        seeds=0,
        quorum_size=0,
        quorum=True,
        nats_connected=True,
    )
