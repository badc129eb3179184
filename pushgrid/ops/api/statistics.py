"""The statistics pipeline's stored windows (``GET /stats/windows`` and a watched pattern's):
max / average / standard deviation of one indicator over one window, with coverage and age."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class WindowStatOut(BaseModel):
    """One window statistic computed by the pipeline, with its as-of time."""

    scope: str = Field(description="'cluster' or 'node:<ServerName>'")
    indicator: str
    window: str
    as_of: datetime = Field(description="The instant the statistics describe")
    count: int = Field(ge=0, description="Seconds of the window that hold a sample")
    coverage: float = Field(
        ge=0.0,
        le=1.0,
        description="count / the seconds the window spans at as_of (docs/monitoring.md, "
        "Coverage): the share of the window the statistics describe",
    )
    low_coverage: bool = Field(
        description="coverage below 0.9: max/avg/stddev describe only the seconds present"
    )
    max: float | None
    avg: float | None
    stddev: float | None
    run_id: int | None = Field(description="The job run that wrote it")
    computed_at: datetime = Field(description="When the pipeline wrote it")
    age_seconds: float = Field(description="Seconds since computed_at")
    stale: bool = Field(description="age_seconds > Admin.StaleAfter")


class WindowStatList(BaseModel):
    items: list[WindowStatOut]
    stale_after_seconds: float


class WatchedWindowStatList(WindowStatList):
    """The stored windows of one watched pattern (the statistics pipeline, ADR 030): scope
    ``cluster`` (summed over members) or ``node:<ServerName>``, the six pattern indicators."""

    pattern: str
