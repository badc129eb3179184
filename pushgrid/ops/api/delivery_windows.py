"""Delivery latency windows (``GET /stats/delivery``, ADR 062): the statistics pipeline's
p50/p90/p99/p99.9 of each (scope, series, window), read from the window's merged buckets."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

__all__ = ["DeliveryWindowList", "DeliveryWindowOut"]

_PERCENTILE = (
    "Seconds: the upper bound of the bucket holding the sample of that rank (nearest rank, as "
    "/stats computes it); null when count is 0 or when it lies above the last bound (100 s)"
)


class DeliveryWindowOut(BaseModel):
    """One window of one delivery latency series, as of the pipeline's instant."""

    scope: str = Field(description="'cluster' (every member's buckets added) or 'node:<name>'")
    series: str = Field(
        description="'member' (the clients' end-to-end latency), 'leg:<leg>' (the server's own "
        "legs) or 'pattern:<pattern>' (a watched pattern's deliveries)"
    )
    window: str
    as_of: datetime = Field(description="The instant the window ends at")
    count: int = Field(ge=0, description="Latencies in the window (the merged buckets' total)")
    p50: float | None = Field(description=_PERCENTILE)
    p90: float | None = Field(description=_PERCENTILE)
    p99: float | None = Field(description=_PERCENTILE)
    p999: float | None = Field(description=_PERCENTILE)
    buckets: str = Field(
        description="The merged histogram, 'index:count' of the non-empty buckets "
        "(bounds: docs/protocol.md 5.7)"
    )
    loss: dict[str, int] = Field(
        description="The clients' loss reports over the window, total per kind: gaps, "
        "duplicates, resyncs, recovered, recovery_failed (docs/protocol.md 5.7)"
    )
    run_id: int | None = Field(description="The job run that wrote it")
    computed_at: datetime = Field(description="When the pipeline wrote it")
    age_seconds: float = Field(description="Seconds since computed_at")
    stale: bool = Field(description="age_seconds > Admin.StaleAfter")


class DeliveryWindowList(BaseModel):
    items: list[DeliveryWindowOut] = Field(
        description="Cluster first, then nodes; per scope the series; windows in their order"
    )
    stale_after_seconds: float
