"""The members' live indicators (``GET /stats/live``) and the Overview's one-refresh answer
(``GET /cluster/overview``): the members, their indicators and the cluster from one round of
reads."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from .cluster import ClusterOut
from .history import IndicatorName
from .members import MemberList

# the twelve windows of the statistics (docs/monitoring.md); a member's live ones are 1m/5m/15m
WindowName = Literal["1m", "5m", "15m", "1h", "5h", "15h", "1d", "5d", "15d", "1mo", "5mo", "15mo"]


class WindowValue(BaseModel):
    """Statistics of one window; ``max``/``avg``/``stddev`` are null while it holds no sample."""

    max: float | None
    avg: float | None
    stddev: float | None
    count: int = Field(ge=0, description="Samples (seconds) in the window")


class LiveIndicator(BaseModel):
    name: IndicatorName
    current: float | None = Field(description="The last per-second sample")
    windows: dict[WindowName, WindowValue] = Field(
        description="The member's live windows since it started (docs/monitoring.md)"
    )


class MemberLive(BaseModel):
    member: str
    reachable: bool
    error: str | None = None
    sample_time: datetime | None = Field(default=None, description="When the sample was taken")
    indicators: list[LiveIndicator] = Field(default_factory=list)


class ClusterIndicator(BaseModel):
    name: IndicatorName
    current: float = Field(description="Sum of the current values of the reachable members")


class ClusterLive(BaseModel):
    members_reachable: int = Field(ge=0)
    members_unreachable: int = Field(ge=0)
    indicators: list[ClusterIndicator] = Field(
        description="Current values summed over the reachable members. Cluster windows are not "
        "summed live: they come from the pipeline (/api/v1/stats/windows?scope=cluster)"
    )


class LiveStats(BaseModel):
    at: datetime
    cluster: ClusterLive
    members: list[MemberLive]


class OverviewOut(BaseModel):
    """What the console's Overview shows at one refresh, from one round of reads: the members,
    their live indicators and the cluster. A member listed unreachable in ``members`` is down in
    ``cluster`` too (issue 34, 4.4: "Cluster OK, 2/3 up" beside a red card)."""

    at: datetime
    members: MemberList
    live: LiveStats
    cluster: ClusterOut
