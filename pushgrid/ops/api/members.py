"""The members the admin API manages, as ``GET /members`` answers and the console's Overview
shows them: where each is, whether it answers, what it says about itself and its panel."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from ..panel import MemberPanel
from ..workers import WorkerProcess

# where the admin API learned of a member
MemberSource = Literal["config", "registered", "discovered"]


class MemberPanelOut(MemberPanel):
    """The member's operator panel (MBean ``pushgrid:type=MemberPanel``; docs/monitoring.md,
    "Member panel"). Window numbers cover the last ``window_seconds``; null: not measured yet
    or not applicable (``replica_lag_max`` without a JetStream stream)."""

    # The contract's one panel type (pushgrid/ops/panel.py) under the schema name the OpenAPI
    # document has always used: no field of its own.


class MemberOut(BaseModel):
    """A member and what its Jolokia agent says about it right now."""

    name: str
    source: MemberSource = Field(
        description="config: from Admin.Members (read-only); registered: through the API; "
        "discovered: reported by another member's cluster view"
    )
    monitor_url: str
    client_url: str | None = Field(
        description="Where the test publish goes (given at registration, or derived from the "
        "member's Listen setting; null when unknown)"
    )
    has_credentials: bool = Field(description="Whether Basic credentials are used (never shown)")
    created_at: datetime | None = None
    reachable: bool
    error: str | None = Field(default=None, description="Why the member could not be read")
    not_answering_seconds: float | None = Field(
        default=None,
        description="Seconds since the member stopped answering (a hung process): it is not "
        "asked again until it answers the admin API's watch; null while it answers",
    )
    server_name: str | None = None
    version: str | None = None
    uptime_seconds: float | None = None
    started_at: datetime | None = None
    engine: str | None = None
    delivery_mode: str | None = None
    connected_users: int | None = None
    subscriptions: int | None = None
    panel: MemberPanelOut | None = Field(
        default=None, description="The operator panel (null: not readable from this member)"
    )
    processes: list[WorkerProcess] | None = Field(
        default=None,
        description="The processes that serve the member (Workers; one with Workers = 1), "
        "worker 0 first (null: not readable from this member)",
    )


class MemberList(BaseModel):
    items: list[MemberOut]
    reachable: int = Field(ge=0)
    unreachable: int = Field(ge=0)
