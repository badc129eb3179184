"""What a member knows about its cluster: the read model every monitoring view formats.

Standalone servers report a one-member cluster that always has its quorum, so dashboards and
alert rules work the same with and without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from pushgrid.metrics.health import ArchiveState, Health, member_health

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
    # the member's health (metrics/health.py), set by the server with what only it knows (its
    # archive, whether it is stopping): see :func:`assessed`
    report: Health | None = None

    @property
    def members_up(self) -> int:
        return sum(1 for m in self.members if m.state == "up")

    @property
    def verdict(self) -> Health:
        """The member's health: ``ok | degraded | down`` and why (the one model, issue 21)."""
        return self.report if self.report is not None else assessed(self).verdict

    @property
    def health(self) -> str:
        return self.verdict.status


def assessed(
    status: ClusterStatus,
    archive: ArchiveState | None = None,
    now: float = 0.0,
    stopping: bool = False,
    isolated: bool = False,
    stalled_pairs: tuple[str, ...] = (),
) -> ClusterStatus:
    """``status`` with its health computed (metrics.health.member_health) and kept in it;
    ``stalled_pairs``: the canary pairs whose delivery to this member stalled (server/canary.py)."""
    me = next((m.name for m in status.members if m.is_self), "")
    report = member_health(
        me,
        members_down=[m.name for m in status.members if m.state != "up" and not m.is_self],
        quorum=status.quorum,
        nats_connected=status.nats_connected,
        replica_lags={r.name: r.lag for r in status.replicas},
        config_mismatch=status.config_mismatch,
        archive=archive,
        now=now,
        stopping=stopping,
        isolated=isolated,
        stalled_pairs=stalled_pairs,
    )
    return replace(status, report=report)


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
