"""Response models of ``/delivery``: end-to-end latency and client-observed loss (ADR 048)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class LatencySummary(BaseModel):
    count: int = Field(description="Latencies in the window")
    p50: float | None = Field(description="Seconds: the upper bound of the bucket holding it")
    p90: float | None
    p99: float | None
    p999: float | None
    buckets: dict[int, int] = Field(
        description="Non-empty buckets: index -> count (bounds in docs/monitoring.md)"
    )


class PatternDelivery(BaseModel):
    pattern: str
    latency: LatencySummary
    loss: dict[str, int] = Field(description="gaps, duplicates, resyncs, recovered, ...")


class MemberDelivery(BaseModel):
    member: str
    reachable: bool
    error: str | None = None
    window_seconds: int = 0
    latency: LatencySummary | None = None
    loss: dict[str, int] = Field(default_factory=dict, description="Reported in the window")
    loss_total: dict[str, int] = Field(default_factory=dict, description="Reported since start")
    reports: int = 0
    rejected_reports: int = 0
    legs: dict[str, LatencySummary] = Field(
        default_factory=dict,
        description="The server's own legs: publish_ack, engine, fanout",
    )
    patterns: list[PatternDelivery] = Field(default_factory=list)


class ClusterDelivery(BaseModel):
    members: int = Field(description="Reachable members merged")
    latency: LatencySummary
    loss: dict[str, int]
    loss_total: dict[str, int]
    legs: dict[str, LatencySummary]
    patterns: list[PatternDelivery]


class DeliveryLatency(BaseModel):
    at: datetime
    cluster: ClusterDelivery = Field(
        description="Every reachable member's buckets and counters added (exact merge)"
    )
    members: list[MemberDelivery]
