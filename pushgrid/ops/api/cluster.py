"""The cluster as the admin API merges it from every readable member (``GET /cluster``, and the
Overview's ``cluster``): delivery mode, the one health, quorum and the members' states."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ClusterMemberOut(BaseModel):
    name: str
    index: int | None = Field(default=None, description="Position in ClusterMembers")
    seed: bool = Field(description="A seed member (JetStream quorum)")
    state: Literal["up", "down"]
    leader: bool = Field(description="Holds the JetStream stream leadership")
    quorum: bool | None = Field(
        default=None, description="Whether this member can store messages (null: not readable)"
    )
    not_answering_seconds: float | None = Field(
        default=None,
        description="Seconds since the member stopped answering the admin API (a hung "
        "process: it accepts connections but does not answer); null while it answers",
    )


class HealthReasonOut(BaseModel):
    """Why the cluster is not ``ok`` (docs/monitoring.md, "Health")."""

    code: str = Field(
        description="member_down, no_quorum, nats_disconnected, stream_lag, archive_failing, "
        "config_mismatch or stopping"
    )
    member: str = Field(description="The member (or stream replica) it is about")
    text: str


class ClusterOut(BaseModel):
    """The cluster merged from every readable member's view (MBean pushgrid:type=Cluster)."""

    mode: str | None = Field(description="standalone, standard or guaranteed")
    health: Literal["ok", "degraded", "down"] = Field(
        description="The one health model (metrics/health.py): the members' own healths merged, "
        "a member that cannot be read counting as down; `down` when no member can serve"
    )
    reasons: list[HealthReasonOut] = Field(default_factory=list)
    quorum: bool = Field(description="Some member can store messages")
    quorum_size: int | None = None
    seeds: int | None = None
    stream_leader: str | None = None
    members: list[ClusterMemberOut]

    @property
    def leader(self) -> str | None:
        """The member that holds the stream leadership (None: none does)."""
        return next((member.name for member in self.members if member.leader), None)
